"""A SageMaker Model created through the API by a custom resource (``Custom::SageMakerModel``), for what
``AWS::SageMaker::Model`` cannot say: a container's ``AdditionalModelDataSources``.

CreateModel takes ``ContainerDefinition.AdditionalModelDataSources``
(https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_AdditionalModelDataSource.html);
CloudFormation's resource schema of ``AWS::SageMaker::Model`` (the one cfn-lint ships) lists no such property
and allows no other (``additionalProperties: false``), nor does aws-cdk-lib's ``CfnModel``. The resource's
properties are CreateModel's request, the definitions written as an ``AWS::SageMaker::Model``'s are, plus the
channels; a Lambda function (:mod:`smkit.cdk.constructs.create_model_handler`, inline, one per stack) calls
CreateModel on Create and Update (a changed request is a new model under a new name; CloudFormation then
deletes the old one) and DeleteModel on Delete. ``Fn::GetAtt`` ``ModelName`` and ``ModelArn`` are what an
``AWS::SageMaker::Model`` gives, so the endpoint config and inference components refer to it alike.

The function may call CreateModel, DescribeModel and DeleteModel only on the models this stack's resources
name (``model/<prefix>-*``, one statement per model) and pass only their execution roles to SageMaker.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from smkit.cdk.constructs.acknowledge import acknowledge, logical_id_of, nag_environment
from smkit.cdk.constructs.arns import sagemaker_arn

RESOURCE_TYPE = "Custom::SageMakerModel"
HANDLER_SOURCE = Path(__file__).with_name("create_model_handler.py")
PREFIX_PROPERTY = "ModelNamePrefix"
# A model name is at most 63 characters: the prefix, "-" and 12 hex digits of the request's digest.
PREFIX_LENGTH = 50
SINGLETON_ID = "CreateModelHandler"

HANDLER_REASONS = {
    "HIPAA.Security-LambdaConcurrency": "Runs only during CloudFormation deployments; no concurrency to reserve.",
    "NIST.800.53.R5-LambdaConcurrency": "Runs only during CloudFormation deployments; no concurrency to reserve.",
    "HIPAA.Security-LambdaDLQ": "Invoked by CloudFormation, which reports failures itself.",
    "NIST.800.53.R5-LambdaDLQ": "Invoked by CloudFormation, which reports failures itself.",
    "HIPAA.Security-LambdaInsideVPC": "Calls only the SageMaker API (CreateModel, DescribeModel, DeleteModel).",
    "NIST.800.53.R5-LambdaInsideVPC": "Calls only the SageMaker API (CreateModel, DescribeModel, DeleteModel).",
}


class CreateModelHandler(Construct):
    """The stack's one function behind ``Custom::SageMakerModel``, its role and its managed policy."""

    def __init__(self, scope: Construct, id_: str, *, log_group: logs.ILogGroup | None) -> None:
        super().__init__(scope, id_)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Creates and deletes this stack's SageMaker models that have additional model data sources.",
        )
        self.policy = iam.ManagedPolicy(self, "Policy", roles=[self.role])
        self.log_group = log_group or logs.LogGroup(
            self, "Logs", retention=logs.RetentionDays.ONE_YEAR, removal_policy=cdk.RemovalPolicy.RETAIN
        )
        self.policy.add_statements(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[self.log_group.log_group_arn, f"{self.log_group.log_group_arn}:*"],
            )
        )
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=lambda_.Runtime.PYTHON_3_14,
            handler="index.handler",
            code=lambda_.Code.from_inline(HANDLER_SOURCE.read_text(encoding="utf-8")),
            timeout=cdk.Duration.minutes(2),
            memory_size=256,
            role=self.role,
            log_group=self.log_group,
            description="Custom::SageMakerModel: CreateModel / DeleteModel (smkit.cdk.constructs.api_model).",
        )
        # The function waits for its policy; it names its role already (GetAtt), so no DependsOn on that
        # (cfn-lint W3005).
        function_resource = self.function.node.default_child
        policy_resource = self.policy.node.default_child
        assert isinstance(function_resource, cdk.CfnResource)
        assert isinstance(policy_resource, cdk.CfnResource)
        function_resource.add_override("DependsOn", [policy_resource.logical_id])
        acknowledge(self.function, HANDLER_REASONS)
        acknowledge(
            self.policy,
            {
                f"AwsSolutions-IAM5[Resource::<{logical_id_of(self.log_group)}.Arn>:*]": (
                    "The function writes its log streams in its own log group only."
                )
            },
        )

    @staticmethod
    def of(scope: Construct, log_group: logs.ILogGroup | None) -> CreateModelHandler:
        """The stack's handler, made on first use."""
        stack = cdk.Stack.of(scope)
        found = stack.node.try_find_child(SINGLETON_ID)
        if isinstance(found, CreateModelHandler):
            return found
        return CreateModelHandler(stack, SINGLETON_ID, log_group=log_group)


class ApiModel(Construct):
    """One ``Custom::SageMakerModel``: ``request`` is CreateModel's request without ``ModelName``
    (``ExecutionRoleArn`` is ``role``'s); ``log_group`` takes the function's logs (default: a group of its
    own, kept one year)."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        role: iam.IRole,
        request: Mapping[str, Any],
        log_group: logs.ILogGroup | None = None,
    ) -> None:
        super().__init__(scope, id_)
        handler = CreateModelHandler.of(self, log_group)
        # SageMaker writes model names lower-cased in ARNs (smkit.cdk.constructs.arns), which IAM matches.
        self.name_prefix = cdk.Names.unique_resource_name(self, max_length=PREFIX_LENGTH).lower()
        models = sagemaker_arn(self, "model", f"{self.name_prefix}-*")
        handler.policy.add_statements(
            iam.PolicyStatement(
                actions=["sagemaker:CreateModel", "sagemaker:DescribeModel", "sagemaker:DeleteModel"],
                resources=[models],
            ),
            iam.PolicyStatement(
                actions=["iam:PassRole"],
                resources=[role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
            ),
        )
        partition, region, account = nag_environment(self)
        acknowledge(
            handler.policy,
            {
                f"AwsSolutions-IAM5[Resource::arn:{partition}:sagemaker:{region}:{account}:model/"
                f"{self.name_prefix}-*]": (
                    "The function names each model <prefix>-<digest of its request>, a new name for each "
                    "change, and deletes the old one: only this resource's models, by their prefix."
                ),
            },
        )
        self.resource = cdk.CustomResource(
            self,
            "Resource",
            service_token=handler.function.function_arn,
            resource_type=RESOURCE_TYPE,
            properties={PREFIX_PROPERTY: self.name_prefix, "ExecutionRoleArn": role.role_arn, **request},
        )
        self.resource.node.add_dependency(handler.policy)

    @property
    def model_name(self) -> str:
        """The model's name (``Fn::GetAtt ModelName``)."""
        return self.resource.get_att_string("ModelName")

    @property
    def model_arn(self) -> str:
        """The model's ARN (``Fn::GetAtt ModelArn``)."""
        return self.resource.get_att_string("ModelArn")
