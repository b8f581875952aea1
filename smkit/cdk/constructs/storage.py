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

# cdk-nag findings the access-log bucket cannot meet, and why.
ACCESS_LOG_REASONS = {
    "AwsSolutions-S1": "This is the access-log target; logging it to itself would loop.",
    "HIPAA.Security-S3BucketLoggingEnabled": "Access-log target bucket; it cannot log itself.",
    "NIST.800.53.R5-S3BucketLoggingEnabled": "Access-log target bucket; it cannot log itself.",
    "HIPAA.Security-S3DefaultEncryptionKMS": (
        "S3 server access logging only delivers to SSE-S3 buckets "
        "(https://docs.aws.amazon.com/AmazonS3/latest/userguide/enable-server-access-logging.html)."
    ),
    "NIST.800.53.R5-S3DefaultEncryptionKMS": "S3 server access logging only delivers to SSE-S3 buckets.",
    "HIPAA.Security-S3BucketReplicationEnabled": REPLICATION_REASON,
    "NIST.800.53.R5-S3BucketReplicationEnabled": REPLICATION_REASON,
}


def private_bucket(
    scope: Construct,
    id_: str,
    *,
    lifecycle_rules: Sequence[s3.LifecycleRule],
    encryption_key: kms.IKey | None = None,
    bucket_key_enabled: bool | None = None,
    access_logs: tuple[s3.IBucket, str] | None = None,
) -> s3.Bucket:
    """A bucket nobody outside the account reaches: public access blocked, TLS only, versioned, ACLs off
    (BucketOwnerEnforced), retained on stack deletion. Encrypted with ``encryption_key``, else with S3's own
    keys (SSE-S3: the only encryption a bucket receiving server access logs may use,
    https://docs.aws.amazon.com/AmazonS3/latest/userguide/enable-server-access-logging.html); its own access
    logged to ``access_logs`` (bucket, key prefix) where given."""
    return s3.Bucket(
        scope,
        id_,
        encryption=s3.BucketEncryption.S3_MANAGED if encryption_key is None else s3.BucketEncryption.KMS,
        encryption_key=encryption_key,
        bucket_key_enabled=bucket_key_enabled,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        enforce_ssl=True,
        versioned=True,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        server_access_logs_bucket=None if access_logs is None else access_logs[0],
        server_access_logs_prefix=None if access_logs is None else access_logs[1],
        removal_policy=cdk.RemovalPolicy.RETAIN,
        lifecycle_rules=list(lifecycle_rules),
    )


def access_log_bucket(scope: Construct, id_: str, reasons: Mapping[str, str]) -> s3.Bucket:
    """A private bucket receiving another bucket's server access logs (SSE-S3), each log kept a year;
    ``reasons``: why it does not meet the cdk-nag rules a log target cannot (logging itself, KMS, ...)."""
    bucket = private_bucket(scope, id_, lifecycle_rules=[s3.LifecycleRule(expiration=cdk.Duration.days(365))])
    acknowledge(bucket, reasons)
    return bucket


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
        self.access_logs = access_log_bucket(self, "AccessLogs", ACCESS_LOG_REASONS)
        self.bucket = private_bucket(
            self,
            "Bucket",
            encryption_key=encryption_key,
            bucket_key_enabled=True,
            access_logs=(self.access_logs, "data-bucket/"),
            lifecycle_rules=_lifecycle(
                expire_after or {}, noncurrent_version_expiration, superseded_model_expiration
            ),
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


def _lifecycle(
    expire_after: Mapping[str, cdk.Duration], noncurrent: cdk.Duration, superseded: cdk.Duration
) -> list[s3.LifecycleRule]:
    """The endpoint bucket's lifecycle rules: old versions and unfinished uploads, superseded model copies,
    then each prefix of ``expire_after`` (sorted)."""
    return [
        s3.LifecycleRule(
            id="OldVersionsAndUploads",
            noncurrent_version_expiration=noncurrent,
            abort_incomplete_multipart_upload_after=cdk.Duration.days(MULTIPART_DAYS),
        ),
        s3.LifecycleRule(
            id="SupersededModelCopies",
            prefix="models/",
            tag_filters=dict([SUPERSEDED_TAG]),
            expiration=superseded,
        ),
        *(
            s3.LifecycleRule(
                id=f"Expire-{prefix.strip('/').replace('/', '-')}",
                prefix=f"{prefix.strip('/')}/",
                expiration=expiration,
            )
            for prefix, expiration in sorted(expire_after.items())
        ),
    ]
