"""The SageMaker execution role: only what the deployed variant needs.

Starts with ``cloudwatch:PutMetricData``; CloudWatch Logs for the endpoint's and the components' own log
groups (:meth:`ExecutionRole.grant_log_groups`), image, model data, KMS, async output, data capture, SNS and
rollback-alarm grants are added by the constructs that need them. No AWS managed policies. Statements that must name ``*`` (actions without resource-level
permissions) each sit alone in their own managed policy, and the cdk-nag acknowledgement of that ``*``
is attached to that policy only, so it covers exactly that statement.
Permissions reference: https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-roles.html#sagemaker-roles-createmodel-perms
"""

from __future__ import annotations

from collections.abc import Sequence

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from constructs import Construct

from smkit.cdk.constructs.acknowledge import acknowledge, logical_id_of, nag_arn, nag_environment

PULL_ACTIONS = ["ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer", "ecr:BatchGetImage"]
LOG_ACTIONS = ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"]
# SageMaker grants itself the key use it needs via grants created with the role's identity.
KMS_ACTIONS = ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey"]


CONFUSED_DEPUTY_URL = (
    "https://docs.aws.amazon.com/sagemaker/latest/dg/security-confused-deputy-prevention.html"
)


def confused_deputy_conditions(stack: cdk.Stack) -> dict[str, dict[str, str]]:
    """The trust policy's conditions: SageMaker may assume the role only on behalf of this account's resources
    in this region (``aws:SourceAccount`` and ``aws:SourceArn``), as AWS's confused-deputy guidance shows.
    """
    return {
        "StringEquals": {"aws:SourceAccount": stack.account},
        "ArnLike": {"aws:SourceArn": f"arn:{stack.partition}:sagemaker:{stack.region}:{stack.account}:*"},
    }


class ExecutionRole(Construct):
    """An IAM role SageMaker assumes to pull the image, read model data and write results; only for this
    account's SageMaker resources in this region (:func:`confused_deputy_conditions`).

    ``role``: a role of your own (``iam.Role`` or ``iam.Role.from_role_arn``) instead of one created here;
    it must trust ``sagemaker.amazonaws.com``. The grants below attach managed policies to it either way.
    """

    def __init__(self, scope: Construct, id_: str, *, role: iam.IRole | None = None) -> None:
        super().__init__(scope, id_)
        self.role: iam.IRole = role or iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com").with_conditions(
                confused_deputy_conditions(cdk.Stack.of(self))
            ),
            description=f"SageMaker execution role of {cdk.Stack.of(self).stack_name}",
        )
        # A customer-managed policy rather than CDK's inline DefaultPolicy (HIPAA/NIST IAMNoInlinePolicy).
        self.policy = iam.ManagedPolicy(self, "Policy", roles=[self.role])
        # What CreateModel checks with the role (image pull, model data, keys): the Model waits for these.
        self.access_policies: list[iam.ManagedPolicy] = [self.policy]
        # PutMetricData has no resource-level permissions; the namespace condition limits it to SageMaker's.
        self.add_wildcard_statement(
            "Metrics",
            iam.PolicyStatement(
                sid="PutEndpointMetrics",
                actions=["cloudwatch:PutMetricData"],
                resources=["*"],
                conditions={"StringLike": {"cloudwatch:namespace": ["/aws/sagemaker/*", "AWS/SageMaker"]}},
            ),
            "cloudwatch:PutMetricData has no resource-level permissions; limited to SageMaker's namespaces "
            "by the cloudwatch:namespace condition.",
        )

    def add_wildcard_statement(self, id_: str, statement: iam.PolicyStatement, reason: str) -> None:
        """Put ``statement`` (resource ``*``) alone into managed policy ``id_``; acknowledge that ``*`` there only."""
        if self.node.try_find_child(id_) is not None:
            return
        policy = iam.ManagedPolicy(self, id_, roles=[self.role], statements=[statement])
        acknowledge(policy, {"AwsSolutions-IAM5[Resource::*]": f"Statement {statement.sid}: {reason}"})
        self.access_policies.append(policy)

    def add_to_policy(self, statement: iam.PolicyStatement) -> None:
        """Add ``statement`` to the role's managed policy."""
        self.policy.add_statements(statement)

    def acknowledge(self, reasons: dict[str, str]) -> None:
        """Acknowledge cdk-nag findings of the role's main managed policy (not of its ``*`` policies)."""
        acknowledge(self.policy, reasons)

    @property
    def role_arn(self) -> str:
        """ARN of the role."""
        return self.role.role_arn

    def grant_key(self, key: kms.IKey) -> None:
        """Encrypt/decrypt with ``key`` and let SageMaker create grants on it for its own resources."""
        self.add_to_policy(iam.PolicyStatement(actions=KMS_ACTIONS, resources=[key.key_arn]))
        self.add_to_policy(
            iam.PolicyStatement(
                actions=["kms:CreateGrant"],
                resources=[key.key_arn],
                conditions={"Bool": {"kms:GrantIsForAWSResource": "true"}},
            )
        )

    def grant_write(self, bucket: s3.IBucket, prefixes: Sequence[str]) -> None:
        """``s3:PutObject`` under each prefix of ``bucket`` (data capture, async output and failures)."""
        resources = [bucket.arn_for_objects(f"{p.strip('/')}/*") for p in prefixes]
        self.add_to_policy(iam.PolicyStatement(actions=["s3:PutObject"], resources=resources))
        logical = logical_id_of(bucket)
        acknowledge(
            self.policy,
            {
                f"AwsSolutions-IAM5[Resource::<{logical}.Arn>/{p.strip('/')}/*]": (
                    "SageMaker writes one object per request under this prefix; the names are not known in advance."
                )
                for p in prefixes
            },
        )

    def grant_read(self, bucket: s3.IBucket, prefix: str) -> None:
        """``s3:GetObject`` under ``prefix`` (async request payloads)."""
        self.add_to_policy(
            iam.PolicyStatement(actions=["s3:GetObject"], resources=[bucket.arn_for_objects(f"{prefix}/*")])
        )
        acknowledge(
            self.policy,
            {
                f"AwsSolutions-IAM5[Resource::<{logical_id_of(bucket)}.Arn>/{prefix}/*]": (
                    "Clients upload async request payloads under this prefix with names of their choosing."
                )
            },
        )

    def grant_s3_read(self, id_: str, uri: str, *, prefix: bool) -> None:
        """``s3:GetObject`` on the object ``s3://BUCKET/KEY``, or on every object under ``s3://BUCKET/PREFIX/``
        (plus ``s3:ListBucket`` limited to that prefix): data SageMaker downloads from a bucket of the user's."""
        name, _, key = uri[len("s3://") :].partition("/")
        # The stack's partition: literal with a concrete region, as cdk-nag spells it in finding ids.
        bucket_arn = f"arn:{cdk.Stack.of(self).partition}:s3:::{name}"
        objects = f"{key}*" if prefix else key
        self.add_to_policy(
            iam.PolicyStatement(
                sid=f"Read{id_}", actions=["s3:GetObject"], resources=[f"{bucket_arn}/{objects}"]
            )
        )
        if not prefix:
            return
        self.add_to_policy(
            iam.PolicyStatement(
                sid=f"List{id_}",
                actions=["s3:ListBucket"],
                resources=[bucket_arn],
                conditions={"StringLike": {"s3:prefix": [objects]}},
            )
        )
        partition, _, _ = nag_environment(self)
        self.acknowledge(
            {
                f"AwsSolutions-IAM5[Resource::arn:{partition}:s3:::{name}/{objects}]": (
                    f"Statement Read{id_}: SageMaker reads every object under the configured prefix {uri}."
                )
            }
        )

    def grant_log_groups(self, groups: Sequence[logs.ILogGroup]) -> None:
        """Write container logs to ``groups`` (the endpoint's and its inference components'), and to no other.

        https://docs.aws.amazon.com/sagemaker/latest/dg/logging-cloudwatch.html
        """
        self.add_to_policy(
            iam.PolicyStatement(
                sid="ContainerLogs", actions=LOG_ACTIONS, resources=[g.log_group_arn for g in groups]
            )
        )

    def grant_describe_alarms(self, alarm_arns: Sequence[str]) -> iam.ManagedPolicy:
        """``cloudwatch:DescribeAlarms`` on the auto-rollback alarms, which SageMaker reads with this role.

        https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-configuration.html
        """
        # A policy of its own: the Model waits for the role's other policies, and the alarms watch the
        # EndpointConfig that names the Model, so one policy for both would be a dependency cycle.
        return iam.ManagedPolicy(
            self,
            "RollbackAlarms",
            roles=[self.role],
            statements=[
                iam.PolicyStatement(
                    sid="RollbackAlarms", actions=["cloudwatch:DescribeAlarms"], resources=list(alarm_arns)
                )
            ],
        )

    def grant_publish(self, topics: Sequence[sns.ITopic]) -> None:
        """``sns:Publish`` on the async success and error topics."""
        self.add_to_policy(
            iam.PolicyStatement(actions=["sns:Publish"], resources=[t.topic_arn for t in topics])
        )

    def grant_pull(self, repository_arn: str) -> None:
        """Pull images from one ECR repository (plus the registry login, which needs ``*``)."""
        self.add_to_policy(iam.PolicyStatement(actions=PULL_ACTIONS, resources=[repository_arn]))
        self.add_wildcard_statement(
            "RegistryLogin",
            iam.PolicyStatement(
                sid="EcrAuthorizationToken", actions=["ecr:GetAuthorizationToken"], resources=["*"]
            ),
            "ecr:GetAuthorizationToken has no resource-level permissions; the registry login needs '*'.",
        )


def grant_vpc_access(
    role: ExecutionRole, *, subnet_ids: Sequence[str], security_group_ids: Sequence[str]
) -> None:
    """ENI management for a Model in a VPC: create only in the given subnets and security groups.

    The ``ec2:Describe*`` calls SageMaker makes have no resource-level permissions and need ``*``
    (https://docs.aws.amazon.com/sagemaker/latest/dg/host-vpc.html).
    """
    stack = cdk.Stack.of(role)

    def arn(resource: str, name: str) -> str:
        return stack.format_arn(service="ec2", resource=resource, resource_name=name)

    eni = arn("network-interface", "*")
    role.add_to_policy(
        iam.PolicyStatement(
            actions=["ec2:CreateNetworkInterface"],
            resources=[eni]
            + [arn("subnet", s) for s in subnet_ids]
            + [arn("security-group", g) for g in security_group_ids],
        )
    )
    role.add_to_policy(
        iam.PolicyStatement(
            actions=[
                "ec2:CreateNetworkInterfacePermission",
                "ec2:DeleteNetworkInterface",
                "ec2:DeleteNetworkInterfacePermission",
            ],
            resources=[eni],
        )
    )
    role.add_wildcard_statement(
        "VpcDescribe",
        iam.PolicyStatement(
            sid="VpcDescribe",
            actions=[
                "ec2:DescribeNetworkInterfaces",
                "ec2:DescribeVpcs",
                "ec2:DescribeDhcpOptions",
                "ec2:DescribeSubnets",
                "ec2:DescribeSecurityGroups",
            ],
            resources=["*"],
        ),
        "the ec2:Describe* calls SageMaker makes for a VPC-attached model have no resource-level permissions.",
    )
    acknowledge(
        role.policy,
        {
            f"AwsSolutions-IAM5[Resource::{nag_arn(role, 'ec2', 'network-interface/*')}]": (
                "ENI statements: SageMaker names the ENIs it creates in the model's subnets."
            ),
        },
    )
