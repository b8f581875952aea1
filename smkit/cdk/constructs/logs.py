"""CloudWatch log groups the deployment would otherwise leave to others: no retention, no CMK.

SageMaker writes an endpoint's container logs to ``/aws/sagemaker/Endpoints/<endpoint name>`` and an
inference component's to ``/aws/sagemaker/InferenceComponents/<component name>``, and creates those groups on
first use without retention or encryption; created here first (the endpoint and each component depend on
theirs), they get both, and the execution role may write to them and to no other group. The BucketDeployment
copy handler (multi-model and prefix model data) logs here too.
https://docs.aws.amazon.com/sagemaker/latest/dg/logging-cloudwatch.html
https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/encrypt-log-data-kms.html
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from smkit.aws.limits import LOG_RETENTION_DAYS
from smkit.cdk.constructs.execution_role import grant_statement

ENDPOINT_LOG_PREFIX = "/aws/sagemaker/Endpoints/"
COMPONENT_LOG_PREFIX = "/aws/sagemaker/InferenceComponents/"
LOG_ACTIONS = ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"]


class DeploymentLogs(Construct):
    """A log group for the deployment's helper functions, and (:meth:`add_endpoint_group`) the endpoint's;
    both with the retention and the KMS key given.

    The endpoint's group is destroyed with the stack: a switch between serverless and instance-based renames
    the endpoint (:class:`smkit.cdk.constructs.endpoint.InferenceEndpoint`), and a retained group would block a
    later return to an earlier name. The helpers' group has a generated name and is retained.
    """

    def __init__(
        self, scope: Construct, id_: str, *, retention: logs.RetentionDays, encryption_key: kms.IKey
    ) -> None:
        super().__init__(scope, id_)
        self.retention = retention
        self.encryption_key = encryption_key
        self.helpers = logs.LogGroup(
            self,
            "Helpers",
            retention=self.retention,
            encryption_key=encryption_key,
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        self.endpoint: logs.LogGroup | None = None
        self.components: dict[str, logs.LogGroup] = {}

    def add_endpoint_group(self, endpoint_name: str) -> logs.LogGroup:
        """``/aws/sagemaker/Endpoints/<endpoint_name>``, created before the endpoint so SageMaker uses it."""
        self.endpoint = logs.LogGroup(
            self,
            "Endpoint",
            log_group_name=f"{ENDPOINT_LOG_PREFIX}{endpoint_name}",
            retention=self.retention,
            encryption_key=self.encryption_key,
            removal_policy=cdk.RemovalPolicy.DESTROY,
        )
        return self.endpoint

    def add_component_group(self, id_: str, component_name: str) -> logs.LogGroup:
        """``/aws/sagemaker/InferenceComponents/<component_name>``, where the component's containers log (an
        adapter logs in its base component's); create it before the component. Destroyed with the stack, as
        the endpoint's group is."""
        group = logs.LogGroup(
            self,
            id_,
            log_group_name=f"{COMPONENT_LOG_PREFIX}{component_name}",
            retention=self.retention,
            encryption_key=self.encryption_key,
            removal_policy=cdk.RemovalPolicy.DESTROY,
        )
        self.components[component_name] = group
        return group

    def grant_write(self, grantee: iam.IGrantable) -> iam.Grant:
        """Write container logs to :attr:`container_groups` (the endpoint's and its inference components'),
        and to no other group. https://docs.aws.amazon.com/sagemaker/latest/dg/logging-cloudwatch.html
        """
        return grant_statement(
            grantee,
            iam.PolicyStatement(
                sid="ContainerLogs",
                actions=LOG_ACTIONS,
                resources=[g.log_group_arn for g in self.container_groups],
            ),
        )

    @property
    def container_groups(self) -> list[logs.LogGroup]:
        """The groups SageMaker writes container logs to: the endpoint's, then the components'."""
        return [g for g in (self.endpoint, *self.components.values()) if g is not None]

    @property
    def endpoint_group_name(self) -> str:
        """Name of the endpoint's log group."""
        if self.endpoint is None:
            raise ValueError("add_endpoint_group() first")
        return self.endpoint.log_group_name


# aws_logs.RetentionDays lists CloudWatch Logs' periods in the same order, INFINITE last.
RETENTION = dict(
    zip(LOG_RETENTION_DAYS, [m for m in logs.RetentionDays if m.name != "INFINITE"], strict=True)
)


def retention_period(days: int) -> logs.RetentionDays:
    """The RetentionDays member for ``days`` (one of CloudWatch Logs' periods)."""
    if days not in RETENTION:
        raise ValueError(
            f"monitoring.log_retention_days {days}: not a CloudWatch Logs retention period "
            f"(one of {', '.join(map(str, LOG_RETENTION_DAYS))})"
        )
    return RETENTION[days]
