"""The customer-managed KMS key that encrypts the endpoint's volumes, bucket, topics and async output."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from smkit.cdk.constructs.arns import every_arn
from smkit.cdk.constructs.execution_role import grant_key_use


class EncryptionKey(Construct):
    """A rotating KMS key created for the deployment, or an existing key given by ARN.

    A created key is retained when the stack is deleted (data written under it stays readable) and lets
    CloudWatch publish alarm notifications to topics encrypted with it. A supplied key's policy is its
    owner's business: it must allow the execution role, ``cloudwatch.amazonaws.com`` and
    ``logs.REGION.amazonaws.com``.
    """

    def __init__(self, scope: Construct, id_: str, *, key_arn: str | None = None) -> None:
        super().__init__(scope, id_)
        self.created = key_arn is None
        if key_arn is None:
            key = kms.Key(
                self,
                "Key",
                description=f"Encrypts SageMaker endpoint data of {cdk.Stack.of(self).stack_name}",
                enable_key_rotation=True,
                removal_policy=cdk.RemovalPolicy.RETAIN,
            )
            # Alarm notifications to an encrypted topic: CloudWatch must be able to use the key.
            # https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html
            key.add_to_resource_policy(
                iam.PolicyStatement(
                    principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                    actions=["kms:Decrypt", "kms:GenerateDataKey"],
                    resources=["*"],
                    conditions={"StringEquals": {"aws:SourceAccount": cdk.Aws.ACCOUNT_ID}},
                )
            )
            # The endpoint's and the helpers' log groups are encrypted with the key.
            allow_cloudwatch_logs(key)
            self.key: kms.IKey = key
        else:
            self.key = kms.Key.from_key_arn(self, "Key", key_arn)

    @property
    def key_arn(self) -> str:
        """ARN of the key."""
        return self.key.key_arn

    def grant_use(self, grantee: iam.IGrantable) -> iam.Grant:
        """Encrypt/decrypt with the key, and create grants on it for AWS resources (SageMaker creates them
        with the execution role's identity): :func:`smkit.cdk.constructs.execution_role.grant_key_use`."""
        return grant_key_use(self.key, grantee)


def allow_cloudwatch_logs(key: kms.Key) -> None:
    """Let CloudWatch Logs of the key's account and region encrypt log groups with ``key``.

    https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/encrypt-log-data-kms.html
    """
    stack = cdk.Stack.of(key)
    key.add_to_resource_policy(
        iam.PolicyStatement(
            principals=[iam.ServicePrincipal(f"logs.{stack.region}.amazonaws.com")],
            actions=[
                "kms:Encrypt*",
                "kms:Decrypt*",
                "kms:ReEncrypt*",
                "kms:GenerateDataKey*",
                "kms:Describe*",
            ],
            resources=["*"],
            conditions={
                "ArnLike": {"kms:EncryptionContext:aws:logs:arn": every_arn(stack, "logs", "log-group")}
            },
        )
    )
