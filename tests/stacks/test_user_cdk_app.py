"""A CDK app of a user's own, built from smkit's constructs the way aws-cdk-lib's are used: its own
``iam.Role``, ``ec2.Vpc`` and ``kms.Key`` objects passed to ``InferenceModel``, ``EndpointConfiguration`` and
``InferenceEndpoint``; an endpoint config deployed elsewhere imported by name and run by a second endpoint; a
Lambda function granted ``endpoint.grant_invoke(fn)``; a variant's instance count autoscaled and an alarm on
its ``metric_model_latency``; an endpoint deployed elsewhere named with ``InferenceEndpoint.from_endpoint_name``
offering the same grant and metrics. Synthesized once for the module with the cdk-nag packs (any unacknowledged
finding fails the synth) and checked with cfn-lint.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk.assertions import Match, Template
from stack_support import cdk_context, validation_findings

from smkit.cdk import (
    AlarmTopic,
    BoundModelData,
    ContainerSpec,
    DeploymentGuardrails,
    EndpointAutoscaling,
    EndpointBucket,
    EndpointConfiguration,
    ExecutionRole,
    IEndpoint,
    IEndpointConfig,
    IModel,
    InferenceEndpoint,
    InferenceModel,
    InstanceType,
    InstanceVariant,
    ModelData,
    ServingImage,
    add_compliance_checks,
)

DLC = "683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-scikit-learn:1.2-1-cpu-py3"
STACK = "UserApp"
HANDLER = """
import os, boto3
def handler(event, context):
    runtime = boto3.client("sagemaker-runtime")
    answer = runtime.invoke_endpoint(EndpointName=os.environ["ENDPOINT_NAME"], Body=event["body"],
                                     ContentType="text/csv")
    return answer["Body"].read().decode()
"""
# The user's own decisions about their function, acknowledged in their app as they would be.
CALLER_REASONS = {
    "HIPAA.Security-LambdaInsideVPC": "Calls only the SageMaker Runtime API.",
    "NIST.800.53.R5-LambdaInsideVPC": "Calls only the SageMaker Runtime API.",
    "HIPAA.Security-LambdaDLQ": "Invoked synchronously; the caller sees the error.",
    "NIST.800.53.R5-LambdaDLQ": "Invoked synchronously; the caller sees the error.",
}
VPC_REASONS = {
    **{
        f"{pack}-VPCDefaultSecurityGroupClosed": "Nothing in the VPC uses its default security group."
        for pack in ("HIPAA.Security", "NIST.800.53.R5")
    },
    **{
        f"{pack}-IAMNoInlinePolicy": "The flow log's role, as CDK writes it: it may only deliver to its log group."
        for pack in ("HIPAA.Security", "NIST.800.53.R5")
    },
}
CALLER_ROLE_REASONS = {
    rule: "The function's grants (grant_invoke, its log group) go to its role's default policy, as CDK writes them."
    for rule in ("HIPAA.Security-IAMNoInlinePolicy", "NIST.800.53.R5-IAMNoInlinePolicy")
}


@dataclass(frozen=True)
class UserApp:
    outdir: Path
    template: dict[str, Any]
    grant: iam.Grant
    latency: cloudwatch.Metric
    imported_errors: cloudwatch.Metric
    endpoint: InferenceEndpoint
    model: InferenceModel
    config: EndpointConfiguration
    existing: InferenceEndpoint
    scaling: EndpointAutoscaling

    def resources(self, kind: str) -> dict[str, dict[str, Any]]:
        return {k: r for k, r in self.template["Resources"].items() if r["Type"] == kind}


def build(outdir: Path) -> UserApp:
    """The user's app: their role, their function, smkit's serving constructs, one synth."""
    app = cdk.App(context=cdk_context(), outdir=str(outdir))
    stack = cdk.Stack(app, STACK, env=cdk.Environment(account="111122223333", region="us-east-1"))
    # The team's own key, VPC and role: aws-cdk-lib objects, made as the team makes them.
    key = kms.Key(stack, "TeamKey", enable_key_rotation=True, removal_policy=cdk.RemovalPolicy.RETAIN)
    flow_logs = logs.LogGroup(stack, "FlowLogs", retention=logs.RetentionDays.ONE_YEAR, encryption_key=key)
    key.grant_encrypt_decrypt(iam.ServicePrincipal(f"logs.{stack.region}.amazonaws.com"))
    vpc = ec2.Vpc(
        stack,
        "TeamVpc",
        # The region's first two zones, resolved at deploy time (cfn-lint W3010: no hard-coded zone names).
        availability_zones=[cdk.Fn.select(i, cdk.Fn.get_azs()) for i in range(2)],
        nat_gateways=0,
        subnet_configuration=[
            ec2.SubnetConfiguration(name="Models", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
        ],
        flow_logs={
            "All": ec2.FlowLogOptions(destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs))
        },
    )
    own_role = iam.Role(
        stack,
        "ServingRole",
        assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
        description="The team's SageMaker role",
    )
    storage = EndpointBucket(stack, "Storage", encryption_key=key)
    role = ExecutionRole(stack, "ExecutionRole", role=own_role)
    key.grant(role, "kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey")
    image = ServingImage.from_dlc(DLC).bind(stack, "Image", grantee=role)
    data = ModelData.from_s3("s3://my-models/churn/model.tar.gz", kind="archive").bind(
        stack, "ModelData", grantee=role, bucket=storage.bucket
    )
    model = InferenceModel(
        stack,
        "Model",
        role=own_role,
        containers=[ContainerSpec(image, data)],
        vpc=vpc,
        vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
    )
    role.grant_vpc_access(model)
    config = EndpointConfiguration(
        stack,
        "EndpointConfig",
        model=model,
        key=key,
        variants=[
            InstanceVariant(name="Blue", instance_type=InstanceType.of("ml.m5.large"), initial_weight=0.9),
            InstanceVariant(name="Green", instance_type=InstanceType.of("ml.c5.large"), initial_weight=0.1),
        ],
    )
    endpoint = InferenceEndpoint(stack, "Endpoint", endpoint_config=config, deployment=DeploymentGuardrails())
    scaling = endpoint.variant("Blue").auto_scale_instance_count(
        max_capacity=4, target_invocations_per_instance=200
    )
    # A config deployed elsewhere, run by an endpoint of this app.
    existing_config = EndpointConfiguration.from_endpoint_config_name(
        stack, "ExistingConfig", "churn-config-v7", variant_names=["AllTraffic"]
    )
    existing = InferenceEndpoint(stack, "Replay", endpoint_config=existing_config)

    caller_role = iam.Role(stack, "CallerRole", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    log_group = logs.LogGroup(stack, "CallerLogs", retention=logs.RetentionDays.ONE_MONTH, encryption_key=key)
    log_group.grant_write(caller_role)
    fn = lambda_.Function(
        stack,
        "Caller",
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="index.handler",
        code=lambda_.Code.from_inline(HANDLER),
        role=caller_role,
        log_group=log_group,
        reserved_concurrent_executions=10,
        environment={"ENDPOINT_NAME": endpoint.endpoint_name},
    )
    grant = endpoint.grant_invoke(fn)
    latency = endpoint.variant("Blue").metric_model_latency(period=cdk.Duration.minutes(1))
    alarms = AlarmTopic(stack, "Alarms", encryption_key=key)
    cloudwatch.Alarm(
        stack, "LatencyAlarm", metric=latency, threshold=500_000, evaluation_periods=3, datapoints_to_alarm=3
    ).add_alarm_action(*alarms.actions)
    legacy = InferenceEndpoint.from_endpoint_name(stack, "Legacy", "churn-legacy", variant_names=["main"])
    legacy.grant_invoke(fn)
    imported_errors = legacy.metric_invocation_5xx_errors()
    cloudwatch.Alarm(
        stack, "LegacyErrors", metric=imported_errors, threshold=1, evaluation_periods=1
    ).add_alarm_action(*alarms.actions)
    # The function references its role (GetAtt); CDK's extra DependsOn on the role is cfn-lint W3005.
    function_resource = fn.node.default_child
    policy = caller_role.node.find_child("DefaultPolicy").node.default_child
    assert isinstance(function_resource, cdk.CfnResource) and isinstance(policy, cdk.CfnResource)
    function_resource.add_override("DependsOn", [policy.logical_id])
    for scope, reasons in ((fn, CALLER_REASONS), (caller_role, CALLER_ROLE_REASONS), (vpc, VPC_REASONS)):
        cdk.Validations.of(scope).acknowledge(
            *(cdk.Acknowledgment(id=rule, reason=reason) for rule, reason in reasons.items())
        )
    add_compliance_checks(app)
    try:
        app.synth()
    except RuntimeError as exc:
        findings = "\n".join(validation_findings(outdir)) or str(exc)
        pytest.fail(f"synth failed validation:\n{findings}", pytrace=False)
    template = json.loads((outdir / f"{STACK}.template.json").read_text())
    return UserApp(
        outdir, template, grant, latency, imported_errors, endpoint, model, config, existing, scaling
    )


@pytest.fixture(scope="module")
def user_app(tmp_path_factory: pytest.TempPathFactory) -> UserApp:
    return build(tmp_path_factory.mktemp("user-cdk-app") / "cdk.out")


def test_the_users_own_vpc_and_key_place_and_encrypt_the_endpoint(user_app: UserApp) -> None:
    (model,) = user_app.resources("AWS::SageMaker::Model").values()
    subnets = [k for k in user_app.resources("AWS::EC2::Subnet") if k.startswith("TeamVpcModels")]
    (group,) = [k for k in user_app.resources("AWS::EC2::SecurityGroup") if k.startswith("Model")]
    assert model["Properties"]["VpcConfig"] == {
        "Subnets": [{"Ref": s} for s in sorted(subnets)],
        "SecurityGroupIds": [{"Fn::GetAtt": [group, "GroupId"]}],
    }
    assert len(subnets) == 2
    (key_id,) = [k for k in user_app.resources("AWS::KMS::Key") if k.startswith("TeamKey")]
    (config,) = user_app.resources("AWS::SageMaker::EndpointConfig").values()
    assert config["Properties"]["KmsKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    # SageMaker creates the model's network interfaces with the role: in those subnets and that group only.
    document = json.dumps([p["Properties"] for p in user_app.resources("AWS::IAM::ManagedPolicy").values()])
    assert "ec2:CreateNetworkInterface" in document and group in document
    assert [g.security_group_id for g in user_app.model.connections.security_groups] == [
        g.security_group_id
        for g in user_app.model.placement.security_groups  # type: ignore[union-attr]
    ]


def test_the_interfaces_and_an_endpoint_config_imported_by_name(user_app: UserApp) -> None:
    assert isinstance(user_app.model, IModel) and isinstance(user_app.config, IEndpointConfig)
    assert isinstance(user_app.endpoint, IEndpoint) and isinstance(user_app.endpoint, cdk.Resource)
    assert user_app.endpoint.variant_names == ("Blue", "Green")
    endpoints = user_app.resources("AWS::SageMaker::Endpoint")
    replay = endpoints[next(k for k in endpoints if k.startswith("Replay"))]
    assert replay["Properties"]["EndpointConfigName"] == "churn-config-v7"
    assert user_app.existing.metric_invocations().dimensions == {
        "EndpointName": user_app.existing.endpoint_name,
        "VariantName": "AllTraffic",
    }
    (own,) = [k for k in user_app.resources("AWS::SageMaker::EndpointConfig")]
    ref = Template.from_json(user_app.template).find_resources("AWS::SageMaker::Endpoint")
    own_endpoint = next(v for k, v in ref.items() if k.startswith("Endpoint"))
    assert own_endpoint["Properties"]["EndpointConfigName"] == {"Fn::GetAtt": [own, "EndpointConfigName"]}


def test_a_variant_scales_its_instance_count(user_app: UserApp) -> None:
    (endpoint_id,) = [k for k in user_app.resources("AWS::SageMaker::Endpoint") if k.startswith("Endpoint")]
    template = Template.from_json(user_app.template)
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {
            "ResourceId": {
                "Fn::Join": [
                    "",
                    ["endpoint/", {"Fn::GetAtt": [endpoint_id, "EndpointName"]}, "/variant/Blue"],
                ]
            },
            "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
            "MinCapacity": 1,
            "MaxCapacity": 4,
        },
    )
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {
            "TargetTrackingScalingPolicyConfiguration": Match.object_like(
                {
                    "PredefinedMetricSpecification": {
                        "PredefinedMetricType": "SageMakerVariantInvocationsPerInstance"
                    },
                    "TargetValue": 200,
                }
            )
        },
    )
    assert user_app.scaling.node.path == f"{STACK}/EndpointBlueAutoscaling"


def test_a_variant_the_endpoint_does_not_have_is_refused(user_app: UserApp) -> None:
    with pytest.raises(ValueError) as err:
        user_app.endpoint.variant("Red")
    assert str(err.value) == (
        f"{STACK}/Endpoint: variant('Red'): the endpoint's variants are ['Blue', 'Green']; name one of them"
    )
    with pytest.raises(ValueError, match=r"variant_name=None: its variants are \['Blue', 'Green'\]"):
        user_app.endpoint.metric_model_latency()


def test_the_users_own_role_serves_the_model(user_app: UserApp) -> None:
    (role_id,) = [k for k in user_app.resources("AWS::IAM::Role") if k.startswith("ServingRole")]
    (model,) = user_app.resources("AWS::SageMaker::Model").values()
    assert model["Properties"]["ExecutionRoleArn"] == {"Fn::GetAtt": [role_id, "Arn"]}
    sagemaker_roles = [
        k
        for k, r in user_app.resources("AWS::IAM::Role").items()
        if "sagemaker.amazonaws.com" in json.dumps(r["Properties"]["AssumeRolePolicyDocument"])
    ]
    assert sagemaker_roles == [role_id]  # no second role created beside it
    attached = [
        p for p in user_app.resources("AWS::IAM::ManagedPolicy").values() if "Roles" in p["Properties"]
    ]
    assert attached and all(p["Properties"]["Roles"] == [{"Ref": role_id}] for p in attached)


def test_grant_invoke_returns_a_grant_on_the_functions_role(user_app: UserApp) -> None:
    assert isinstance(user_app.grant, iam.Grant) and user_app.grant.success
    template = Template.from_json(user_app.template)
    own = f"arn:aws:sagemaker:us-east-1:111122223333:endpoint/{user_app.endpoint.endpoint_name.lower()}"
    legacy = "arn:aws:sagemaker:us-east-1:111122223333:endpoint/churn-legacy"
    (role_id,) = [k for k in user_app.resources("AWS::IAM::Role") if k.startswith("CallerRole")]
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "Roles": [{"Ref": role_id}],
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Action": ["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointAsync"],
                                "Resource": sorted([own, legacy]),
                            }
                        )
                    ]
                )
            },
        },
    )


def test_metric_model_latency_is_the_variants_with_the_given_period(user_app: UserApp) -> None:
    Template.from_json(user_app.template).has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/SageMaker",
            "MetricName": "ModelLatency",
            "Statistic": "Average",
            "Period": 60,
            "Dimensions": Match.array_equals(
                [
                    {"Name": "EndpointName", "Value": user_app.endpoint.endpoint_name},
                    {"Name": "VariantName", "Value": "Blue"},
                ]
            ),
        },
    )


def test_an_endpoint_named_by_from_endpoint_name_offers_the_same_metrics(user_app: UserApp) -> None:
    Template.from_json(user_app.template).has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/SageMaker",
            "MetricName": "Invocation5XXErrors",
            "Statistic": "Sum",
            "Dimensions": Match.array_equals(
                [{"Name": "EndpointName", "Value": "churn-legacy"}, {"Name": "VariantName", "Value": "main"}]
            ),
        },
    )


def test_every_endpoint_serves_the_endpoint_interface(user_app: UserApp) -> None:
    def watched(endpoint: IEndpoint) -> list[str]:
        metrics = [
            endpoint.metric_invocations(),
            endpoint.metric_model_latency(statistic="p99"),
            endpoint.metric_invocation_5xx_errors(period=cdk.Duration.minutes(5)),
        ]
        return [f"{m.metric_name}/{m.statistic}/{m.period.to_seconds()}" for m in metrics]

    assert watched(user_app.existing) == [
        "Invocations/Sum/60",
        "ModelLatency/p99/60",
        "Invocation5XXErrors/Sum/300",
    ]
    stack = cdk.Stack(cdk.App(), "Other")
    imported = InferenceEndpoint.from_endpoint_name(
        stack, "Named", "churn-prod", variant_names=["AllTraffic"]
    )
    assert watched(imported) == watched(user_app.existing)
    assert imported.metric_invocation_4xx_errors().metric_name == "Invocation4XXErrors"
    assert imported.metric_overhead_latency().statistic == "Average"
    assert imported.metric_invocations_per_instance(variant_name="blue").dimensions == {
        "EndpointName": "churn-prod",
        "VariantName": "blue",
    }


def test_the_app_passes_cdk_nag_and_cfn_lint(user_app: UserApp) -> None:
    assert validation_findings(user_app.outdir) == []
    done = subprocess.run(
        [str(Path(sys.executable).with_name("cfn-lint")), str(user_app.outdir / f"{STACK}.template.json")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("variants", "known"),
    [((), "its variants are not known"), (("blue", "green"), "its variants are ['blue', 'green']")],
)
def test_a_metric_of_an_endpoint_with_no_single_variant_needs_variant_name(
    variants: tuple[str, ...], known: str
) -> None:
    stack = cdk.Stack(cdk.App(), "Other")
    endpoint = InferenceEndpoint.from_endpoint_name(stack, "Named", "churn-prod", variant_names=variants)
    with pytest.raises(ValueError) as err:
        endpoint.metric_model_latency()
    assert str(err.value) == (
        f"Other/Named: variant_name=None: {known}; name the variant the metric is of, "
        "e.g. metric_model_latency(variant_name='AllTraffic')"
    )


@pytest.mark.parametrize("name", ["", "churn_prod", "-churn", "x" * 64])
def test_from_endpoint_name_refuses_a_name_sagemaker_would(name: str) -> None:
    stack = cdk.Stack(cdk.App(), "Other")
    with pytest.raises(
        ValueError, match=rf"^Other/Named: endpoint_name={name!r}: give the deployed EndpointName"
    ):
        InferenceEndpoint.from_endpoint_name(stack, "Named", name)


def test_from_arn_and_from_name_imports() -> None:
    stack = cdk.Stack(cdk.App(), "Other", env=cdk.Environment(account="111122223333", region="eu-west-1"))
    by_arn = InferenceEndpoint.from_endpoint_arn(
        stack, "ByArn", "arn:aws:sagemaker:us-east-1:444455556666:endpoint/churn-prod", variant_names=["main"]
    )
    assert (by_arn.endpoint_name, by_arn.env.account, by_arn.env.region) == (
        "churn-prod",
        "444455556666",
        "us-east-1",
    )
    assert by_arn.endpoint_arn == "arn:aws:sagemaker:us-east-1:444455556666:endpoint/churn-prod"
    assert by_arn.variant("main").metric_invocations().dimensions == {
        "EndpointName": "churn-prod",
        "VariantName": "main",
    }
    model = InferenceModel.from_model_name(stack, "Model", "Churn-v3")
    assert model.model_name == "Churn-v3"
    assert model.model_arn.endswith(":sagemaker:eu-west-1:111122223333:model/churn-v3")
    config = EndpointConfiguration.from_endpoint_config_name(stack, "Config", "churn-config-v7")
    assert config.endpoint_config_arn.endswith(":111122223333:endpoint-config/churn-config-v7")
    assert config.variant_names == ()


@pytest.mark.parametrize(
    ("network", "message"),
    [
        (
            {"vpc_subnets": ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)},
            "vpc=None: give the VPC (vpc=my_vpc), or list the subnets",
        ),
        (
            {"vpc_subnets": ec2.SubnetSelection(subnets=[])},
            "security_groups=None: without vpc give the security groups",
        ),
    ],
)
def test_a_vpc_placement_that_names_no_subnet_or_group_is_refused(
    network: dict[str, Any], message: str
) -> None:
    stack = cdk.Stack(cdk.App(), "Other")
    role = iam.Role.from_role_arn(stack, "Role", "arn:aws:iam::111122223333:role/serving")
    data = BoundModelData(model_data_url="s3://my-models/churn/model.tar.gz")
    with pytest.raises(ValueError, match=rf"^Other/Model: invalid VPC placement: .*{re.escape(message)}"):
        InferenceModel(
            stack,
            "Model",
            role=role,
            containers=[ContainerSpec(DLC, data)],
            **network,
        )


def test_more_security_groups_than_sagemaker_takes_are_refused() -> None:
    stack = cdk.Stack(cdk.App(), "Other")
    role = iam.Role.from_role_arn(stack, "Role", "arn:aws:iam::111122223333:role/serving")
    subnets = ec2.SubnetSelection(
        subnets=[ec2.Subnet.from_subnet_id(stack, "Subnet", "subnet-0aaaaaaaaaaaaaaaa")]
    )
    groups = [ec2.SecurityGroup.from_security_group_id(stack, f"Group{i}", f"sg-0{i}") for i in range(6)]
    with pytest.raises(
        ValueError, match=r"^Other/Model: invalid VPC placement: security_groups: 6 given \(at most 5\)$"
    ):
        InferenceModel(
            stack,
            "Model",
            role=role,
            containers=[ContainerSpec(DLC, BoundModelData(model_data_url="s3://my-models/m.tar.gz"))],
            vpc_subnets=subnets,
            security_groups=groups,
        )
