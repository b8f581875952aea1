"""The ECR repository CI pushes the serving image to (image source ``ecr``), with its scanning and signing."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_iam as iam
from aws_cdk import aws_signer as signer
from constructs import Construct

from smkit.cdk.constructs.execution_role import grant_pull

UNTAGGED_DAYS = 14
# ECR managed signing signs with an AWS Signer profile of this platform (Notation, OCI).
# https://docs.aws.amazon.com/AmazonECR/latest/userguide/managed-signing.html
SIGNING_PLATFORM = signer.Platform.NOTATION_OCI_SHA384_ECDSA


class ServingRepository(Construct):
    """Private repository: scan on push, immutable tags, KMS encryption, lifecycle rules, retained on delete.

    Lifecycle: untagged images expire after ``UNTAGGED_DAYS`` days. Tagged images never expire: a count or
    age rule cannot tell the image production runs, or a release recorded for rollback, from an old one
    (https://docs.aws.amazon.com/AmazonECR/latest/userguide/LifecyclePolicies.html). Delete tags that no
    recorded release names by hand (``scripts.rollback --list`` shows the recorded ones).

    ``enhanced_scanning``: Amazon Inspector scans this repository's images on push and again whenever a new
    vulnerability is published (``AWS::ECR::RegistryScanningConfiguration``, ScanType ENHANCED,
    CONTINUOUS_SCAN, filtered to this repository). The scanning configuration is one per registry (account
    and region): deploying it replaces the registry's existing one, and the account must have Amazon
    Inspector enabled, so it is off by default and basic scan-on-push stays.
    https://docs.aws.amazon.com/AmazonECR/latest/userguide/image-scanning-enhanced.html
    ``signing``: ECR managed signing signs every image pushed to this repository with a new AWS Signer
    profile (``AWS::ECR::SigningConfiguration``, also one per registry); the signature is a separate
    artifact referring to the image, so the image manifest SageMaker pulls is unchanged.
    https://docs.aws.amazon.com/AmazonECR/latest/userguide/managed-signing.html
    """

    def __init__(
        self, scope: Construct, id_: str, *, enhanced_scanning: bool = False, signing: bool = False
    ) -> None:
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
        self.scanning: ecr.CfnRegistryScanningConfiguration | None = None
        self.signing_profile: signer.SigningProfile | None = None
        self.signing: ecr.CfnSigningConfiguration | None = None
        if enhanced_scanning:
            self.scanning = ecr.CfnRegistryScanningConfiguration(
                self,
                "EnhancedScanning",
                scan_type="ENHANCED",
                rules=[
                    ecr.CfnRegistryScanningConfiguration.ScanningRuleProperty(
                        scan_frequency="CONTINUOUS_SCAN",
                        repository_filters=[
                            ecr.CfnRegistryScanningConfiguration.RepositoryFilterProperty(
                                filter=self.repository.repository_name, filter_type="WILDCARD"
                            )
                        ],
                    )
                ],
            )
        if signing:
            self.signing_profile = signer.SigningProfile(self, "SigningProfile", platform=SIGNING_PLATFORM)
            self.signing = ecr.CfnSigningConfiguration(
                self,
                "ManagedSigning",
                rules=[
                    ecr.CfnSigningConfiguration.RuleProperty(
                        signing_profile_arn=self.signing_profile.signing_profile_arn,
                        repository_filters=[
                            ecr.CfnSigningConfiguration.RepositoryFilterProperty(
                                filter=self.repository.repository_name, filter_type="WILDCARD_MATCH"
                            )
                        ],
                    )
                ],
            )

    def grant_pull(self, grantee: iam.IGrantable) -> iam.Grant:
        """Pull images from this repository: the three layer-pull actions on it, plus the registry login
        (``ecr:GetAuthorizationToken`` on ``*``): :func:`smkit.cdk.constructs.execution_role.grant_pull`."""
        return grant_pull(grantee, self.repository.repository_arn)
