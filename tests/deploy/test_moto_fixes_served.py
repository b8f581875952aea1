"""The moto repairs working in the server: stacks that moto alone cannot create, update or delete.

Each test starts a server of its own, because it checks that a stack delete leaves nothing behind in the
whole account (no model, alarm, role or policy), which a server shared with other tests cannot show.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from botocore.exceptions import ClientError

from smkit.emulator import MotoServer, live_stacks, sagemaker_resources

BOOTSTRAP_VERSION = "/cdk-bootstrap/hnb659fds/version"
TEMPLATE: dict[str, Any] = {
    "Parameters": {
        "BootstrapVersion": {"Type": "AWS::SSM::Parameter::Value<String>", "Default": BOOTSTRAP_VERSION}
    },
    "Resources": {
        "Role": {
            "Type": "AWS::IAM::Role",
            "Properties": {
                "AssumeRolePolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "sagemaker.amazonaws.com"},
                            "Action": "sts:AssumeRole",
                        }
                    ],
                }
            },
        },
        "Policy": {
            "Type": "AWS::IAM::ManagedPolicy",
            "Properties": {
                "PolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"}
                    ],
                },
                "Roles": [{"Ref": "Role"}],
            },
        },
        "Key": {
            "Type": "AWS::KMS::Key",
            "Properties": {
                "KeyPolicy": {"Version": "2012-10-17", "Statement": []},
                "Tags": [{"Key": "project", "Value": "smkit"}],
            },
        },
        "Repository": {"Type": "AWS::ECR::Repository"},
        "Model": {
            "Type": "AWS::SageMaker::Model",
            "Properties": {
                "ExecutionRoleArn": {"Fn::GetAtt": ["Role", "Arn"]},
                "EnableNetworkIsolation": True,
                "InferenceExecutionConfig": {"Mode": "Direct"},
                "Containers": [
                    {"Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/a:1", "ContainerHostname": "a"},
                    {"Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/b:1", "ContainerHostname": "b"},
                ],
            },
        },
        "Alarm": {
            "Type": "AWS::CloudWatch::Alarm",
            "Properties": {
                "Namespace": "AWS/SageMaker",
                "MetricName": "Invocation5XXErrors",
                "Dimensions": [{"Name": "EndpointName", "Value": "e"}],
                "ComparisonOperator": "GreaterThanOrEqualToThreshold",
                "EvaluationPeriods": 3,
                "Period": 60,
                "Statistic": "Sum",
                "Threshold": 5,
            },
        },
        "Dashboard": {
            "Type": "AWS::CloudWatch::Dashboard",
            "Properties": {
                "DashboardBody": {
                    "Fn::Join": ["", ['{"widgets":[{"alarms":["', {"Fn::GetAtt": ["Alarm", "Arn"]}, '"]}]}']]
                }
            },
        },
        "Custom": {"Type": "Custom::Anything", "Properties": {"ServiceToken": "arn:aws:lambda:x"}},
    },
}


def test_repaired_server_creates_updates_and_deletes_what_moto_alone_cannot() -> None:
    with MotoServer.start() as server:
        server.client("ssm").put_parameter(Name=BOOTSTRAP_VERSION, Value="30", Type="String")
        cloudformation = server.client("cloudformation")
        cloudformation.create_stack(StackName="Fixes", TemplateBody=json.dumps(TEMPLATE))
        stack = cloudformation.describe_stacks(StackName="Fixes")["Stacks"][0]
        assert stack["StackStatus"] == "CREATE_COMPLETE"
        created = {
            r["LogicalResourceId"]: r["PhysicalResourceId"]
            for r in cloudformation.list_stack_resources(StackName="Fixes")["StackResourceSummaries"]
            if r.get("LogicalResourceId")
        }
        assert "Custom" not in created  # not run: reconcile() reports it (no Custom:: type is in MOTO_SKIPS)

        model = server.client("sagemaker").describe_model(ModelName=created["Model"].rsplit("/", 1)[-1])
        assert [c["ContainerHostname"] for c in model["Containers"]] == ["a", "b"]
        assert model["EnableNetworkIsolation"] is True
        assert model["InferenceExecutionConfig"] == {"Mode": "Direct"}
        assert created["Repository"] == created["Repository"].lower()
        alarm = server.client("cloudwatch").describe_alarms(AlarmNames=[created["Alarm"]])["MetricAlarms"]
        assert alarm[0]["Threshold"] == 5.0
        tags = server.client("kms").list_resource_tags(KeyId=created["Key"])["Tags"]
        assert tags == [{"TagKey": "project", "TagValue": "smkit"}]

        # An update that keeps CDK's SSM-typed BootstrapVersion parameter and changes the Model recreates it
        # under its old name (see the AWS::SageMaker::Model update fix), so the EndpointConfig stays valid.
        updated = json.loads(json.dumps(TEMPLATE))
        updated["Resources"]["Model"]["Properties"]["Containers"][0]["Environment"] = {"LOG_LEVEL": "10"}
        cloudformation.update_stack(
            StackName="Fixes",
            TemplateBody=json.dumps(updated),
            Parameters=[{"ParameterKey": "BootstrapVersion", "UsePreviousValue": True}],
        )
        stack = cloudformation.describe_stacks(StackName="Fixes")["Stacks"][0]
        assert stack["StackStatus"] == "UPDATE_COMPLETE"
        [model_name] = sagemaker_resources(server.client("sagemaker"))["models"]
        assert model_name == created["Model"].rsplit("/", 1)[-1]
        model = server.client("sagemaker").describe_model(ModelName=model_name)
        assert model["Containers"][0]["Environment"] == {"LOG_LEVEL": "10"}

        cloudformation.delete_stack(StackName="Fixes")
        assert live_stacks(cloudformation) == []
        assert sagemaker_resources(server.client("sagemaker"))["models"] == []
        assert server.client("cloudwatch").describe_alarms()["MetricAlarms"] == []
        assert server.client("iam").list_roles()["Roles"] == []
        assert server.client("iam").list_policies(Scope="Local")["Policies"] == []


IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/a:1"
COMPONENT_LOGS = "arn:aws:logs:*:*:log-group:/aws/sagemaker/InferenceComponents/tabular-ic"


def _role_policy(*resources_by_action: tuple[str, list[str]]) -> dict[str, Any]:
    """A managed policy of ``Role`` allowing each (action, resources)."""
    statements = [{"Effect": "Allow", "Action": a, "Resource": r} for a, r in resources_by_action]
    return {
        "Type": "AWS::IAM::ManagedPolicy",
        "Properties": {
            "PolicyDocument": {"Version": "2012-10-17", "Statement": statements},
            "Roles": [{"Ref": "Role"}],
        },
    }


COMPONENT_TEMPLATE: dict[str, Any] = {
    "Resources": {
        "Role": TEMPLATE["Resources"]["Role"],
        "Logs": _role_policy(("logs:PutLogEvents", [COMPONENT_LOGS, f"{COMPONENT_LOGS}:*"])),
        "Model": {
            "Type": "AWS::SageMaker::Model",
            "Properties": {
                "ExecutionRoleArn": {"Fn::GetAtt": ["Role", "Arn"]},
                "PrimaryContainer": {"Image": IMAGE},
            },
        },
        "Pool": {
            "Type": "AWS::SageMaker::EndpointConfig",
            "Properties": {
                "ExecutionRoleArn": {"Fn::GetAtt": ["Role", "Arn"]},
                "ProductionVariants": [
                    {
                        "VariantName": "main",
                        "InstanceType": "ml.m5.xlarge",
                        "InitialInstanceCount": 1,
                        "ManagedInstanceScaling": {
                            "Status": "ENABLED",
                            "MinInstanceCount": 0,
                            "MaxInstanceCount": 2,
                        },
                    }
                ],
            },
        },
        "Endpoint": {
            "Type": "AWS::SageMaker::Endpoint",
            "Properties": {"EndpointConfigName": {"Fn::GetAtt": ["Pool", "EndpointConfigName"]}},
        },
        "Component": {
            "Type": "AWS::SageMaker::InferenceComponent",
            "DependsOn": ["Logs"],
            "Properties": {
                "InferenceComponentName": "tabular-ic",
                "EndpointName": {"Fn::GetAtt": ["Endpoint", "EndpointName"]},
                "VariantName": "main",
                "Specification": {
                    "ModelName": {"Fn::GetAtt": ["Model", "ModelName"]},
                    "ComputeResourceRequirements": {
                        "MinMemoryRequiredInMb": 1024,
                        "NumberOfCpuCoresRequired": 1,
                    },
                },
                "RuntimeConfig": {"CopyCount": 2},
            },
        },
        "Shadowed": {
            "Type": "AWS::SageMaker::EndpointConfig",
            "Properties": {
                "ProductionVariants": [
                    {
                        "VariantName": "production",
                        "ModelName": {"Fn::GetAtt": ["Model", "ModelName"]},
                        "InstanceType": "ml.m5.large",
                        "InitialInstanceCount": 1,
                        "InitialVariantWeight": 1,
                    }
                ],
                "ShadowProductionVariants": [
                    {
                        "VariantName": "shadow",
                        "ModelName": {"Fn::GetAtt": ["Model", "ModelName"]},
                        "InstanceType": "ml.m5.large",
                        "InitialInstanceCount": 1,
                        "InitialVariantWeight": 0.5,
                    }
                ],
            },
        },
    }
}


def test_repaired_server_hosts_inference_components_and_keeps_shadow_variants() -> None:
    with MotoServer.start() as server:
        cloudformation = server.client("cloudformation")
        cloudformation.create_stack(StackName="Components", TemplateBody=json.dumps(COMPONENT_TEMPLATE))
        assert (
            cloudformation.describe_stacks(StackName="Components")["Stacks"][0]["StackStatus"]
            == "CREATE_COMPLETE"
        )
        created = {
            r["LogicalResourceId"]: r["PhysicalResourceId"]
            for r in cloudformation.list_stack_resources(StackName="Components")["StackResourceSummaries"]
            if r.get("LogicalResourceId")
        }
        sagemaker = server.client("sagemaker")
        endpoint = created["Endpoint"].rsplit("/", 1)[-1]
        [listed] = sagemaker.list_inference_components(EndpointNameEquals=endpoint)["InferenceComponents"]
        assert (listed["InferenceComponentName"], listed["InferenceComponentStatus"]) == (
            "tabular-ic",
            "InService",
        )
        component = sagemaker.describe_inference_component(InferenceComponentName="tabular-ic")
        assert component["RuntimeConfig"] == {"DesiredCopyCount": 2, "CurrentCopyCount": 2}
        assert component["Specification"]["ComputeResourceRequirements"]["NumberOfCpuCoresRequired"] == 1
        assert created["Component"] == component["InferenceComponentArn"]
        pool = sagemaker.describe_endpoint_config(EndpointConfigName=created["Pool"].rsplit("/", 1)[-1])
        assert pool["ExecutionRoleArn"].endswith(created["Role"])
        assert "ModelName" not in pool["ProductionVariants"][0]
        shadowed = sagemaker.describe_endpoint_config(
            EndpointConfigName=created["Shadowed"].rsplit("/", 1)[-1]
        )
        assert [v["VariantName"] for v in shadowed["ShadowProductionVariants"]] == ["shadow"]
        with pytest.raises(ClientError, match="Could not find inference component"):
            sagemaker.describe_inference_component(InferenceComponentName="missing")

        cloudformation.delete_stack(StackName="Components")
        assert sagemaker_resources(sagemaker) == {
            "models": [],
            "endpoint_configs": [],
            "endpoints": [],
            "inference_components": [],
        }


def _scaled_endpoint(instance_type: str, endpoint_name: str, scaled: str = "main") -> dict[str, Any]:
    """An endpoint whose variant ``scaled`` (production "main" or the "shadow" variant) is a scalable target
    of type ``instance_type``."""
    model = TEMPLATE["Resources"]["Model"]
    role = TEMPLATE["Resources"]["Role"]
    model_name = {"Fn::GetAtt": ["Model", "ModelName"]}
    main = {"VariantName": "main", "ModelName": model_name, "InitialInstanceCount": 1}
    main["InstanceType"] = instance_type if scaled == "main" else "ml.m5.large"
    config: dict[str, Any] = {"ProductionVariants": [main]}
    if scaled == "shadow":
        shadow = {"VariantName": "shadow", "ModelName": model_name, "InitialInstanceCount": 1}
        config["ShadowProductionVariants"] = [{**shadow, "InstanceType": instance_type}]
    return {
        "Resources": {
            "Role": role,
            "Model": model,
            "Config": {"Type": "AWS::SageMaker::EndpointConfig", "Properties": config},
            "Endpoint": {
                "Type": "AWS::SageMaker::Endpoint",
                "Properties": {
                    "EndpointName": endpoint_name,
                    "EndpointConfigName": {"Fn::GetAtt": ["Config", "EndpointConfigName"]},
                    # moto updates only resources whose own template text changed (see the Model fix).
                    "Tags": [{"Key": "instance-type", "Value": instance_type}],
                },
            },
            "Target": {
                "Type": "AWS::ApplicationAutoScaling::ScalableTarget",
                "Properties": {
                    "ServiceNamespace": "sagemaker",
                    "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
                    "ResourceId": {
                        "Fn::Join": [
                            "",
                            ["endpoint/", {"Fn::GetAtt": ["Endpoint", "EndpointName"]}, f"/variant/{scaled}"],
                        ]
                    },
                    "MinCapacity": 1,
                    "MaxCapacity": 2,
                },
            },
        }
    }


@pytest.mark.parametrize("scaled", ["main", "shadow"])
def test_repaired_server_refuses_what_sagemaker_refuses_for_a_scalable_variant(scaled: str) -> None:
    """Same name + new instance type of a scalable variant (production or shadow) fails; a new name replaces
    the endpoint."""
    with MotoServer.start() as server:
        cloudformation = server.client("cloudformation")
        cloudformation.create_stack(
            StackName="Scaled", TemplateBody=json.dumps(_scaled_endpoint("ml.m5.large", "scaled-a", scaled))
        )
        targets = server.client("application-autoscaling").describe_scalable_targets(
            ServiceNamespace="sagemaker"
        )
        assert [t["ResourceId"] for t in targets["ScalableTargets"]] == [
            f"endpoint/scaled-a/variant/{scaled}"
        ]

        # An update that keeps the scalable variant's instance type passes.
        kept = _scaled_endpoint("ml.m5.large", "scaled-a", scaled)
        kept["Resources"]["Endpoint"]["Properties"]["Tags"].append({"Key": "release", "Value": "2"})
        cloudformation.update_stack(StackName="Scaled", TemplateBody=json.dumps(kept))
        status = cloudformation.describe_stacks(StackName="Scaled")["Stacks"][0]["StackStatus"]
        assert status == "UPDATE_COMPLETE"

        refused = True
        try:
            cloudformation.update_stack(
                StackName="Scaled",
                TemplateBody=json.dumps(_scaled_endpoint("ml.m5.xlarge", "scaled-a", scaled)),
            )
            status = cloudformation.describe_stacks(StackName="Scaled")["Stacks"][0]["StackStatus"]
            refused = status != "UPDATE_COMPLETE"
        except ClientError:
            pass
        assert refused

        cloudformation.update_stack(
            StackName="Scaled", TemplateBody=json.dumps(_scaled_endpoint("ml.m5.xlarge", "scaled-b", scaled))
        )
        assert (
            cloudformation.describe_stacks(StackName="Scaled")["Stacks"][0]["StackStatus"]
            == "UPDATE_COMPLETE"
        )
        names = [e["EndpointName"] for e in server.client("sagemaker").list_endpoints()["Endpoints"]]
        assert names == ["scaled-b"]
        targets = server.client("application-autoscaling").describe_scalable_targets(
            ServiceNamespace="sagemaker"
        )
        assert [t["ResourceId"] for t in targets["ScalableTargets"]] == [
            f"endpoint/scaled-b/variant/{scaled}"
        ]


def _volume_stack(where: str) -> dict[str, Any]:
    """A model and an endpoint config with VolumeSizeInGB on ml.g5.2xlarge (instance storage) in ``where``:
    the production variant, the shadow variant or the model-less pool of an inference-component endpoint."""
    variant = {
        "VariantName": "main",
        "ModelName": {"Fn::GetAtt": ["Model", "ModelName"]},
        "InstanceType": "ml.m5.large",
        "InitialInstanceCount": 1,
        "InitialVariantWeight": 1,
    }
    gpu = {"InstanceType": "ml.g5.2xlarge", "VolumeSizeInGB": 100}
    properties: dict[str, Any] = {
        "ProductionVariants": [{**variant, **gpu} if where == "production" else variant]
    }
    if where == "shadow":
        properties["ShadowProductionVariants"] = [{**variant, **gpu, "VariantName": "shadow"}]
    if where == "pool":
        pool = {k: v for k, v in variant.items() if k != "ModelName"}
        properties = {
            "ExecutionRoleArn": {"Fn::GetAtt": ["Role", "Arn"]},
            "ProductionVariants": [{**pool, **gpu}],
        }
    return {
        "Resources": {
            "Role": TEMPLATE["Resources"]["Role"],
            "Model": COMPONENT_TEMPLATE["Resources"]["Model"],
            "Config": {"Type": "AWS::SageMaker::EndpointConfig", "Properties": properties},
        }
    }


def test_repaired_server_refuses_a_volume_size_on_instance_storage() -> None:
    """CreateEndpointConfig (API and CloudFormation) refuses VolumeSizeInGB on ml.g5 in every kind of variant;
    on an EBS instance type it passes."""
    with MotoServer.start() as server:
        sagemaker = server.client("sagemaker")
        variant = {
            "VariantName": "main",
            "ModelName": "m",
            "InstanceType": "ml.g5.2xlarge",
            "VolumeSizeInGB": 100,
        }
        with pytest.raises(ClientError, match="Currently only Amazon EBS gp2 storage volumes are supported"):
            sagemaker.create_endpoint_config(EndpointConfigName="gpu", ProductionVariants=[variant])
        cloudformation = server.client("cloudformation")
        for where in ("production", "shadow", "pool"):
            try:
                cloudformation.create_stack(
                    StackName=f"Volume-{where}", TemplateBody=json.dumps(_volume_stack(where))
                )
                status = cloudformation.describe_stacks(StackName=f"Volume-{where}")["Stacks"][0][
                    "StackStatus"
                ]
            except ClientError as exc:
                assert "Currently only Amazon EBS gp2 storage volumes are supported" in str(exc)
                status = "refused"
            assert status != "CREATE_COMPLETE", where
        assert sagemaker.list_endpoint_configs()["EndpointConfigs"] == []


def _component_stack(policy: dict[str, Any], adapter_url: str) -> dict[str, Any]:
    """COMPONENT_TEMPLATE's endpoint with its component, an adapter reading ``adapter_url``, and ``policy`` as
    the role's only policy."""
    resources = {k: v for k, v in COMPONENT_TEMPLATE["Resources"].items() if k != "Shadowed"}
    adapter = {
        "Type": "AWS::SageMaker::InferenceComponent",
        "DependsOn": ["Component", "Logs"],
        "Properties": {
            "InferenceComponentName": "tabular-ic-adapter",
            "EndpointName": {"Fn::GetAtt": ["Endpoint", "EndpointName"]},
            "VariantName": "main",
            "Specification": {
                "BaseInferenceComponentName": "tabular-ic",
                "Container": {"ArtifactUrl": adapter_url},
            },
        },
    }
    return {"Resources": {**resources, "Logs": policy, "Adapter": adapter}}


def test_repaired_server_refuses_components_whose_role_cannot_log_or_read() -> None:
    """A component whose role may not write its log group, an adapter whose role may not read its weights, and
    an update that revokes the previous weights are refused; granted, they pass."""
    logs = ("logs:PutLogEvents", [COMPONENT_LOGS, f"{COMPONENT_LOGS}:*"])
    v1, v2 = "s3://weights/adapters/v1/", "s3://weights/adapters/v2/"
    read_v1 = ("s3:GetObject", ["arn:aws:s3:::weights/adapters/v1/*"])
    read_v2 = ("s3:GetObject", ["arn:aws:s3:::weights/adapters/v2/*"])
    with MotoServer.start() as server:
        cloudformation = server.client("cloudformation")

        def outcome(name: str, template: dict[str, Any], *, update: bool = False) -> str:
            call = cloudformation.update_stack if update else cloudformation.create_stack
            try:
                call(StackName=name, TemplateBody=json.dumps(template))
            except ClientError as exc:
                return str(exc)
            stack = cloudformation.describe_stacks(StackName=name)["Stacks"][0]
            return str(stack["StackStatus"]) + str(stack.get("StackStatusReason", ""))

        no_logs = outcome("NoLogs", _component_stack(_role_policy(read_v1), v1))
        assert "may not write the logs of inference component tabular-ic" in no_logs, no_logs
        no_read = outcome("NoRead", _component_stack(_role_policy(logs), v1))
        assert "may not s3:GetObject the adapter weights s3://weights/adapters/v1/" in no_read, no_read
        assert outcome("Granted", _component_stack(_role_policy(logs, read_v1), v1)) == "CREATE_COMPLETE"
        revoked = outcome("Granted", _component_stack(_role_policy(logs, read_v2), v2), update=True)
        assert "can no longer read the previous release's data s3://weights/adapters/v1/" in revoked, revoked
        kept = outcome("Kept", _component_stack(_role_policy(logs, read_v1), v1))
        assert kept == "CREATE_COMPLETE", kept
        both = _component_stack(_role_policy(logs, read_v1, read_v2), v2)
        assert outcome("Kept", both, update=True) == "UPDATE_COMPLETE"


def _named_variant_endpoint(variant: str, *, guarded: bool) -> dict[str, Any]:
    """An endpoint whose one variant is called ``variant``, with or without a blue/green DeploymentConfig."""
    endpoint: dict[str, Any] = {
        "EndpointName": "day2",
        "EndpointConfigName": {"Fn::GetAtt": ["Config", "EndpointConfigName"]},
    }
    if guarded:
        endpoint["DeploymentConfig"] = {
            "BlueGreenUpdatePolicy": {
                "TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 60}
            }
        }
    variant_props = {
        "VariantName": variant,
        "ModelName": {"Fn::GetAtt": ["Model", "ModelName"]},
        "InstanceType": "ml.m5.large",
        "InitialInstanceCount": 1,
        "InitialVariantWeight": 1,
    }
    return {
        "Resources": {
            "Role": TEMPLATE["Resources"]["Role"],
            "Model": COMPONENT_TEMPLATE["Resources"]["Model"],
            "Config": {
                "Type": "AWS::SageMaker::EndpointConfig",
                "Properties": {"ProductionVariants": [variant_props]},
            },
            "Endpoint": {"Type": "AWS::SageMaker::Endpoint", "Properties": endpoint},
        }
    }


def test_repaired_server_refuses_a_guarded_update_that_renames_a_variant() -> None:
    """Blue/green with other variant names fails as SageMaker fails it; the same change without
    DeploymentConfig (what the stacks send then, smkit.config.day2) updates."""
    with MotoServer.start() as server:
        cloudformation = server.client("cloudformation")
        cloudformation.create_stack(
            StackName="Day2", TemplateBody=json.dumps(_named_variant_endpoint("blue", guarded=True))
        )
        try:
            cloudformation.update_stack(
                StackName="Day2", TemplateBody=json.dumps(_named_variant_endpoint("green", guarded=True))
            )
            status = cloudformation.describe_stacks(StackName="Day2")["Stacks"][0]["StackStatus"]
            refused = str(status)
        except ClientError as exc:
            refused = str(exc)
        assert "must have the same variant name as the old endpoint configuration" in refused, refused
        cloudformation.update_stack(
            StackName="Day2", TemplateBody=json.dumps(_named_variant_endpoint("green", guarded=False))
        )
        assert (
            cloudformation.describe_stacks(StackName="Day2")["Stacks"][0]["StackStatus"] == "UPDATE_COMPLETE"
        )
        config = server.client("sagemaker").describe_endpoint_config(
            EndpointConfigName=server.client("sagemaker").describe_endpoint(EndpointName="day2")[
                "EndpointConfigName"
            ]
        )
        assert [v["VariantName"] for v in config["ProductionVariants"]] == ["green"]


SERIALIZED = """
import threading
from moto.moto_server.werkzeug_app import DomainDispatcherApplication
from smkit.emulator.moto_fixes import serialize_requests

serialize_requests()
inside, most, release = [0], [0], threading.Event()
lock = threading.Lock()

def backend(environ, start_response):
    with lock:
        inside[0] += 1
        most[0] = max(most[0], inside[0])
    release.wait(timeout=0.5)  # the first request holds the backend; a second one would enter meanwhile
    with lock:
        inside[0] -= 1
    return [b""]

app = DomainDispatcherApplication(lambda service: backend)
app.get_application = lambda environ: backend
threads = [threading.Thread(target=app, args=({}, None)) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(most[0])
"""


def test_the_server_runs_one_request_at_a_time_through_motos_backends() -> None:
    """Six stacks deployed at once (the CDK CLI's --concurrency 6) made moto's threaded server iterate its
    IAM role dict while another request added to it ("dictionary changed size during iteration"): its
    dispatcher is serialized (moto_fixes.serialize_requests). Four callers of a backend that waits: at most
    one is ever inside."""
    done = subprocess.run([sys.executable, "-c", SERIALIZED], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "1"
