"""SNS topics an async endpoint notifies on success and on error.

https://docs.aws.amazon.com/sagemaker/latest/dg/async-inference-check-predictions.html
"""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct

from smkit.cdk.constructs.logical_ids import pin


class AsyncTopics(Construct):
    """Two KMS-encrypted, TLS-only topics: ``success`` and ``error``."""

    def __init__(self, scope: Construct, id_: str, *, encryption_key: kms.IKey) -> None:
        super().__init__(scope, id_)
        self.success = sns.Topic(self, "Success", master_key=encryption_key, enforce_ssl=True)
        self.error = sns.Topic(self, "Error", master_key=encryption_key, enforce_ssl=True)
        # Their ids from before this construct existed: a replaced topic would lose its subscriptions.
        pin(self.success, "AsyncSuccess", "Resource")
        pin(self.error, "AsyncError", "Resource")

    @property
    def topics(self) -> list[sns.ITopic]:
        """Both topics (what the execution role may publish to)."""
        return [self.success, self.error]

    def grant_publish(self, grantee: iam.IGrantable) -> iam.Grant:
        """``sns:Publish`` on both topics (SageMaker notifies with the execution role)."""
        return iam.Grant.add_to_principal(
            grantee=grantee, actions=["sns:Publish"], resource_arns=[t.topic_arn for t in self.topics]
        )
