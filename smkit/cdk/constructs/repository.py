"""The ECR repository CI pushes the serving image to (image source ``ecr``)."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ecr as ecr
from constructs import Construct

UNTAGGED_DAYS = 14


class ServingRepository(Construct):
    """Private repository: scan on push, immutable tags, KMS encryption, lifecycle rules, retained on delete.

    Lifecycle: untagged images expire after ``UNTAGGED_DAYS`` days. Tagged images never expire: a count or
    age rule cannot tell the image production runs, or a release recorded for rollback, from an old one
    (https://docs.aws.amazon.com/AmazonECR/latest/userguide/LifecyclePolicies.html). Delete tags that no
    recorded release names by hand (``scripts.rollback --list`` shows the recorded ones).
    """

    def __init__(self, scope: Construct, id_: str) -> None:
        super().__init__(scope, id_)
        self.repository = ecr.Repository(
            self,
            "Repository",
            image_scan_on_push=True,
            image_tag_mutability=ecr.TagMutability.IMMUTABLE,
            encryption=ecr.RepositoryEncryption.KMS,
            removal_policy=cdk.RemovalPolicy.RETAIN,
            lifecycle_rules=[
                ecr.LifecycleRule(
                    description=f"Expire untagged images after {UNTAGGED_DAYS} days",
                    rule_priority=1,
                    tag_status=ecr.TagStatus.UNTAGGED,
                    max_image_age=cdk.Duration.days(UNTAGGED_DAYS),
                ),
            ],
        )
