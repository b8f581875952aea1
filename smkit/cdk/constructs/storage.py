"""The endpoint's own bucket: model prefixes, data capture, async output and failures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from smkit.cdk.constructs.acknowledge import acknowledge, logical_id_of
from smkit.cdk.constructs.execution_role import acknowledge_grant
from smkit.object_store import SUPERSEDED_TAG

MULTIPART_DAYS = 7
THIRTY_DAYS = cdk.Duration.days(30)

REPLICATION_REASON = (
    "Cross-region replication is a disaster-recovery choice of the account owner (destination region, "
    "second key); versioning is on so it can be enabled without changes here."
)


class EndpointBucket(Construct):
    """A KMS-encrypted, versioned, TLS-only, private bucket with server access logging.

    Both buckets are retained on stack deletion: captured requests and async results are data.
    Lifecycle (S3 counts whole days): objects under each prefix of ``expire_after`` expire after its
    duration, overwritten or deleted versions after ``noncurrent_version_expiration``, unfinished multipart
    uploads after a week, and model copies under ``models/`` tagged ``smkit:superseded=true`` after
    ``superseded_model_expiration`` (the deploy
    step tags only copies no live model and no recorded release uses).
    https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-lifecycle-mgmt.html
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        encryption_key: kms.IKey,
        expire_after: Mapping[str, cdk.Duration] | None = None,
        noncurrent_version_expiration: cdk.Duration = THIRTY_DAYS,
        superseded_model_expiration: cdk.Duration = THIRTY_DAYS,
    ) -> None:
        super().__init__(scope, id_)
        self.access_logs = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[s3.LifecycleRule(expiration=cdk.Duration.days(365))],
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        acknowledge(
            self.access_logs,
            {
                "AwsSolutions-S1": "This is the access-log target; logging it to itself would loop.",
                "HIPAA.Security-S3BucketLoggingEnabled": "Access-log target bucket; it cannot log itself.",
                "NIST.800.53.R5-S3BucketLoggingEnabled": "Access-log target bucket; it cannot log itself.",
                "HIPAA.Security-S3DefaultEncryptionKMS": (
                    "S3 server access logging only delivers to SSE-S3 buckets "
                    "(https://docs.aws.amazon.com/AmazonS3/latest/userguide/enable-server-access-logging.html)."
                ),
                "NIST.800.53.R5-S3DefaultEncryptionKMS": (
                    "S3 server access logging only delivers to SSE-S3 buckets."
                ),
                "HIPAA.Security-S3BucketReplicationEnabled": REPLICATION_REASON,
                "NIST.800.53.R5-S3BucketReplicationEnabled": REPLICATION_REASON,
            },
        )
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.KMS,
            encryption_key=encryption_key,
            bucket_key_enabled=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix="data-bucket/",
            removal_policy=cdk.RemovalPolicy.RETAIN,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="OldVersionsAndUploads",
                    noncurrent_version_expiration=noncurrent_version_expiration,
                    abort_incomplete_multipart_upload_after=cdk.Duration.days(MULTIPART_DAYS),
                ),
                s3.LifecycleRule(
                    id="SupersededModelCopies",
                    prefix="models/",
                    tag_filters=dict([SUPERSEDED_TAG]),
                    expiration=superseded_model_expiration,
                ),
                *(
                    s3.LifecycleRule(
                        id=f"Expire-{prefix.strip('/').replace('/', '-')}",
                        prefix=f"{prefix.strip('/')}/",
                        expiration=expiration,
                    )
                    for prefix, expiration in sorted((expire_after or {}).items())
                ),
            ],
        )
        acknowledge(
            self.bucket,
            {
                "HIPAA.Security-S3BucketReplicationEnabled": REPLICATION_REASON,
                "NIST.800.53.R5-S3BucketReplicationEnabled": REPLICATION_REASON,
            },
        )

    def s3_uri(self, prefix: str) -> str:
        """``s3://BUCKET/prefix`` inside the endpoint bucket."""
        return f"s3://{self.bucket.bucket_name}/{prefix.strip('/')}"

    def grant_write(self, grantee: iam.IGrantable, prefixes: Sequence[str]) -> iam.Grant:
        """``s3:PutObject`` under each of ``prefixes`` (data capture, async output and failures); the key use
        comes with the grant on the key."""
        grant = iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["s3:PutObject"],
            resource_arns=[self.bucket.arn_for_objects(f"{p.strip('/')}/*") for p in prefixes],
        )
        acknowledge_grant(
            grantee,
            {
                f"AwsSolutions-IAM5[Resource::<{logical_id_of(self.bucket)}.Arn>/{p.strip('/')}/*]": (
                    "SageMaker writes one object per request under this prefix; the names are not known in advance."
                )
                for p in prefixes
            },
        )
        return grant

    def grant_read(self, grantee: iam.IGrantable, prefix: str) -> iam.Grant:
        """``s3:GetObject`` under ``prefix`` (async request payloads)."""
        grant = iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["s3:GetObject"],
            resource_arns=[self.bucket.arn_for_objects(f"{prefix}/*")],
        )
        acknowledge_grant(
            grantee,
            {
                f"AwsSolutions-IAM5[Resource::<{logical_id_of(self.bucket)}.Arn>/{prefix}/*]": (
                    "Clients upload async request payloads under this prefix with names of their choosing."
                )
            },
        )
        return grant
