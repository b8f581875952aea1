"""Inference components (config/inference-components.yaml) and shadow variants (config/realtime-shadow.yaml)
in their synthesized templates: the session app already passed cdk-nag and cfn-lint covers them."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk.assertions import Match
from stack_support import CONFIG_DIR, SynthesizedApp

from smkit.cdk.constructs.autoscaling import EndpointAutoscaling, ScalingSettings, ScalingTarget
from smkit.cdk.constructs.endpoint import InferenceEndpoint
from smkit.cdk.constructs.inference_component import ComponentCompute, InferenceComponent
from smkit.cdk.constructs.model import InferenceModel
from smkit.config import load_config, parse_config
from smkit.config.component_rules import production_containers

COMPONENT = "AWS::SageMaker::InferenceComponent"
MODEL = "AWS::SageMaker::Model"
ENDPOINT_CONFIG = "AWS::SageMaker::EndpointConfig"
ENDPOINT = "AWS::SageMaker::Endpoint"
TARGET = "AWS::ApplicationAutoScaling::ScalableTarget"
POLICY = "AWS::ApplicationAutoScaling::ScalingPolicy"
ALARM = "AWS::CloudWatch::Alarm"


def _resources(synthesized: SynthesizedApp, case: str, kind: str) -> dict[str, dict]:
    return {k: r for k, r in synthesized.template_json(case)["Resources"].items() if r["Type"] == kind}


def test_endpoint_config_has_a_model_less_variant_with_managed_instance_scaling_and_the_role(
    synthesized: SynthesizedApp,
) -> None:
    t = synthesized.template("inference-components")
    t.has_resource_properties(
        ENDPOINT_CONFIG,
        {
            "ExecutionRoleArn": {"Fn::GetAtt": [Match.string_like_regexp("^ExecutionRole"), "Arn"]},
            "EnableNetworkIsolation": True,
            "KmsKeyId": Match.any_value(),
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
                    "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
                }
            ],
        },
    )
    # One model per component, each with its one container.
    models = _resources(synthesized, "inference-components", MODEL)
    assert len(models) == 2
    assert all("PrimaryContainer" in m["Properties"] for m in models.values())


def test_each_component_reserves_its_resources_on_the_variant(synthesized: SynthesizedApp) -> None:
    t = synthesized.template("inference-components")
    t.resource_count_is(COMPONENT, 2)
    t.has_resource_properties(
        COMPONENT,
        {
            "EndpointName": {"Fn::GetAtt": ["EndpointEEF1FD8F", "EndpointName"]},
            "VariantName": "main",
            "InferenceComponentName": Match.string_like_regexp("ComponentTabular"),
            "RuntimeConfig": {"CopyCount": 1},
            "Specification": {
                "ModelName": {"Fn::GetAtt": [Match.string_like_regexp("^ModelTabular"), "ModelName"]},
                "ComputeResourceRequirements": {
                    "NumberOfCpuCoresRequired": 1,
                    "MinMemoryRequiredInMb": 1024,
                    "MaxMemoryRequiredInMb": 2048,
                },
                "StartupParameters": {"ContainerStartupHealthCheckTimeoutInSeconds": 300},
            },
            # Both components scale to zero: no rolling batch is 5-50% of their copies.
            "DeploymentConfig": Match.absent(),
        },
    )
    synthesized.template("capacity").has_resource_properties(
        COMPONENT,
        {
            "DeploymentConfig": {
                "RollingUpdatePolicy": {
                    "MaximumBatchSize": {"Type": "COPY_COUNT", "Value": 1},  # 50% of its 2 copies
                    "WaitIntervalInSeconds": 120,
                },
                "AutoRollbackConfiguration": {
                    "Alarms": [
                        # 5XX rate and p99 latency; the 4XX rate only notifies.
                        {"AlarmName": {"Ref": Match.string_like_regexp("^Monitoringtabular5xxRate")}},
                        {"AlarmName": {"Ref": Match.string_like_regexp("^MonitoringtabularLatencyP99")}},
                    ]
                },
            },
        },
    )
    t.has_resource_properties(
        COMPONENT,
        {
            "InferenceComponentName": Match.string_like_regexp("ComponentIris"),
            "Specification": Match.object_like(
                {
                    "ComputeResourceRequirements": {
                        "NumberOfCpuCoresRequired": 0.5,
                        "MinMemoryRequiredInMb": 512,
                    }
                }
            ),
        },
    )


def test_copies_scale_on_invocations_per_copy_down_to_zero(synthesized: SynthesizedApp) -> None:
    t = synthesized.template("inference-components")
    names = {
        r["Properties"]["InferenceComponentName"]
        for r in _resources(synthesized, "inference-components", COMPONENT).values()
    }
    targets = _resources(synthesized, "inference-components", TARGET)
    assert {r["Properties"]["ResourceId"] for r in targets.values()} == {
        f"inference-component/{n}" for n in names
    }
    t.has_resource_properties(
        TARGET,
        {
            "ServiceNamespace": "sagemaker",
            "ScalableDimension": "sagemaker:inference-component:DesiredCopyCount",
            "MinCapacity": 0,
            "MaxCapacity": 4,
            "RoleARN": Match.any_value(),
        },
    )
    t.has_resource_properties(
        POLICY,
        {
            "PolicyType": "TargetTrackingScaling",
            "TargetTrackingScalingPolicyConfiguration": {
                "PredefinedMetricSpecification": {
                    "PredefinedMetricType": "SageMakerInferenceComponentInvocationsPerCopy"
                },
                "TargetValue": 100,
                "ScaleInCooldown": 300,
                "ScaleOutCooldown": 300,
            },
        },
    )
    for target in targets.values():
        assert "AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint" in json.dumps(
            target["Properties"]["RoleARN"]
        )


def test_scale_from_zero_step_policy_and_its_no_capacity_alarm(synthesized: SynthesizedApp) -> None:
    policies = {
        k: r
        for k, r in _resources(synthesized, "inference-components", POLICY).items()
        if r["Properties"]["PolicyType"] == "StepScaling"
    }
    assert len(policies) == 2
    for policy in policies.values():
        assert policy["Properties"]["StepScalingPolicyConfiguration"] == {
            "AdjustmentType": "ChangeInCapacity",
            "MetricAggregationType": "Maximum",
            "Cooldown": 60,
            "StepAdjustments": [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}],
        }
    alarms = [
        r["Properties"]
        for r in _resources(synthesized, "inference-components", ALARM).values()
        if r["Properties"].get("MetricName") == "NoCapacityInvocationFailures"
    ]
    assert len(alarms) == 2
    for alarm in alarms:
        assert alarm["Namespace"] == "AWS/SageMaker"
        assert alarm["Statistic"] == "Sum" and alarm["Period"] == 60
        assert (alarm["Threshold"], alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]) == (1, 1, 1)
        assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert alarm["Dimensions"][0]["Name"] == "InferenceComponentName"
        [action] = alarm["AlarmActions"]
        assert action["Ref"] in policies


def test_alarms_and_dashboard_per_component(synthesized: SynthesizedApp) -> None:
    t = synthesized.template("inference-components")
    alarms = _resources(synthesized, "inference-components", ALARM).values()
    for metric in ("Invocation5XXErrors", "Invocation4XXErrors"):
        # Error rates: metric math over the component's errors and invocations.
        [rate] = [
            a
            for a in alarms
            if metric in json.dumps(a["Properties"].get("Metrics", [])) and "ComponentIris" in json.dumps(a)
        ]
        assert "100 *" in json.dumps(rate["Properties"]["Metrics"])
        assert '"InferenceComponentName"' in json.dumps(rate["Properties"]["Metrics"])
    t.has_resource_properties(
        ALARM, {"MetricName": "ModelLatency", "ExtendedStatistic": "p99", "Threshold": 800_000}
    )
    t.resource_count_is("AWS::CloudWatch::Dashboard", 1)
    outputs = synthesized.template_json("inference-components")["Outputs"]
    assert "tabular=TabularComponentsDevServing-ComponentTabular-" in json.dumps(
        outputs["InferenceComponentNames"]
    )


def test_shadow_variant_serves_its_own_model_with_the_sampled_weight(synthesized: SynthesizedApp) -> None:
    t = synthesized.template("realtime-shadow")
    t.resource_count_is(MODEL, 2)
    t.has_resource_properties(
        ENDPOINT_CONFIG,
        {
            "ProductionVariants": [
                Match.object_like(
                    {
                        "VariantName": "production",
                        "InitialVariantWeight": 1,
                        "ModelName": {
                            "Fn::GetAtt": [Match.string_like_regexp("^Model[0-9A-F]{8}$"), "ModelName"]
                        },
                    }
                )
            ],
            "ShadowProductionVariants": [
                Match.object_like(
                    {
                        "VariantName": "shadow",
                        "InstanceType": "ml.m5.large",
                        "InitialInstanceCount": 1,
                        "InitialVariantWeight": 0.5,
                        "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
                        "ModelName": {
                            "Fn::GetAtt": [Match.string_like_regexp("^ShadowModelShadow"), "ModelName"]
                        },
                    }
                )
            ],
            "DataCaptureConfig": Match.object_like(
                {
                    "EnableCapture": True,
                    "CaptureOptions": [{"CaptureMode": "Input"}, {"CaptureMode": "Output"}],
                }
            ),
        },
    )


def test_shadow_alarms_notify_but_never_roll_back(synthesized: SynthesizedApp) -> None:
    t = synthesized.template("realtime-shadow")
    resources = synthesized.template_json("realtime-shadow")["Resources"]
    shadow_alarms = {
        k
        for k, r in resources.items()
        if r["Type"] == ALARM and '{"Name": "VariantName", "Value": "shadow"}' in json.dumps(r["Properties"])
    }
    assert len(shadow_alarms) == 3
    t.has_resource_properties(
        ALARM, {"AlarmDescription": Match.string_like_regexp("^Shadow variant shadow: ")}
    )
    [endpoint] = [r for r in resources.values() if r["Type"] == ENDPOINT]
    rollback = {
        a["AlarmName"]["Ref"]
        for a in endpoint["Properties"]["DeploymentConfig"]["AutoRollbackConfiguration"]["Alarms"]
    }
    assert len(rollback) == 2 and not rollback & shadow_alarms  # new-fleet 5XX rate and p99 latency


def test_constructs_refuse_what_the_api_refuses() -> None:
    stack = cdk.Stack(cdk.App(), "Refusals")
    endpoint = InferenceEndpoint.from_endpoint_name(stack, "Endpoint", "e", variant_names=["main"])
    model = InferenceModel.from_model_name(stack, "Model", "m")
    with pytest.raises(ValueError, match=r"copies=0 \(must be >= 1 at creation\)"):
        InferenceComponent(
            stack,
            "Zero",
            endpoint=endpoint,
            model=model,
            compute=ComponentCompute(cdk.Size.mebibytes(1024)),
            copies=0,
        )
    with pytest.raises(ValueError, match=r"max_capacity=0 \(must be >= min_capacity and >= 1\)"):
        EndpointAutoscaling(
            stack,
            "Bad",
            component_name="c",
            settings=ScalingSettings(ScalingTarget.INVOCATIONS_PER_COPY, 0, 0, 5),
        )
    component = InferenceComponent(
        stack,
        "Many",
        endpoint=endpoint,
        model=model,
        compute=ComponentCompute(cdk.Size.mebibytes(1024)),
        copies=1,
    )
    alarms = [
        cloudwatch.Alarm(
            stack, f"A{i}", metric=component.metric("Invocations"), threshold=1, evaluation_periods=1
        )
        for i in range(11)
    ]
    with pytest.raises(ValueError, match="at most 10 rollback alarms"):
        component.add_rollback_alarms(*alarms)


def test_shadow_config_parses_into_production_and_candidate_containers() -> None:
    cfg = load_config(CONFIG_DIR / "realtime-shadow.yaml")
    assert [c.name for c in production_containers(cfg)] == ["tabular"]
    assert parse_config(cfg.model_dump(by_alias=True)).endpoint.shadow_variants[0].container == "candidate"


def test_a_component_on_an_endpoint_of_two_variants_names_its_variant() -> None:
    stack = cdk.Stack(cdk.App(), "Components")
    endpoint = InferenceEndpoint.from_endpoint_name(stack, "Endpoint", "e", variant_names=["a", "b"])
    with pytest.raises(ValueError) as err:
        InferenceComponent(
            stack,
            "Component",
            endpoint=endpoint,
            model=InferenceModel.from_model_name(stack, "Model", "m"),
            compute=ComponentCompute(cdk.Size.mebibytes(1024)),
        )
    assert str(err.value) == (
        "Components/Component: variant_name=None: the endpoint's variants are ['a', 'b']; "
        "give the variant the component runs on"
    )
