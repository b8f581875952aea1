"""The ECR repository CI pushes the serving image to (image source ``ecr``)."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ecr as ecr
from constructs import Construct

UNTAGGED_DAYS = 14
MAX_IMAGES = 50


class ServingRepository(Construct):
    """Private repository: scan on push, immutable tags, KMS encryption, lifecycle rules, retained on delete.

    Lifecycle: untagged layers expire after ``UNTAGGED_DAYS`` days; at most ``MAX_IMAGES`` images are kept.
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
                ecr.LifecycleRule(
                    description=f"Keep the newest {MAX_IMAGES} images",
                    rule_priority=2,
                    tag_status=ecr.TagStatus.ANY,
                    max_image_count=MAX_IMAGES,
                ),
            ],
        )
