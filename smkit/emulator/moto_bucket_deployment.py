"""CDK's BucketDeployment (``Custom::CDKBucketDeployment``) performed inside moto (part of ``moto_fixes.FIXES``).

A BucketDeployment is a custom resource whose Lambda handler copies zipped assets from the CDK bootstrap
bucket into a destination bucket. moto runs Lambda only inside Docker, so here the copy is done with moto's
own S3 backend, as the handler does it: each source object is read, extracted when ``Extract`` is true (the
zip's members land under ``DestinationBucketKeyPrefix``) or copied under its own name otherwise, and written
with ``PutObject`` semantics, so the destination bucket's default encryption applies. ``Prune`` removes
other objects under the prefix; ``RetainOnDelete`` keeps them when the resource goes. Source markers
(deploy-time token substitution) are not used by this kit and are refused rather than ignored.
https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.aws_s3_deployment-readme.html
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

from smkit.emulator.moto_resource import EmulatedResource, route_custom_type

RESOURCE_TYPE = "Custom::CDKBucketDeployment"


def _flag(properties: dict[str, Any], name: str, default: bool) -> bool:
    value = properties.get(name, default)
    return value if isinstance(value, bool) else str(value).lower() == "true"


def _s3(account_id: str, region_name: str) -> Any:
    from moto.s3.models import s3_backends
    from moto.utilities.utils import get_partition

    return s3_backends[account_id][get_partition(region_name)]


def _copy(properties: dict[str, Any], account_id: str, region_name: str) -> list[str]:
    """Do the handler's copy; the destination keys written."""
    s3 = _s3(account_id, region_name)
    if any(properties.get("SourceMarkers") or []):
        raise ValueError(f"{RESOURCE_TYPE}: SourceMarkers are not supported by the emulator")
    bucket = properties["DestinationBucketName"]
    prefix = properties.get("DestinationBucketKeyPrefix", "")
    if prefix and not prefix.endswith("/"):
        prefix += "/"
    extract = _flag(properties, "Extract", True)
    written: list[str] = []
    for source_bucket, source_key in zip(
        properties["SourceBucketNames"], properties["SourceObjectKeys"], strict=True
    ):
        source = s3.get_object(source_bucket, source_key)
        if source is None:
            raise ValueError(f"{RESOURCE_TYPE}: no object s3://{source_bucket}/{source_key} to copy")
        if not extract:
            key = prefix + source_key.rsplit("/", 1)[-1]
            s3.put_object(bucket, key, source.value)
            written.append(key)
            continue
        with zipfile.ZipFile(io.BytesIO(source.value)) as archive:
            for member in archive.infolist():
                if member.is_dir():
                    continue
                key = prefix + member.filename
                s3.put_object(bucket, key, archive.read(member))
                written.append(key)
    if _flag(properties, "Prune", True):
        keep = set(written)
        for key in [k for k in s3.get_bucket(bucket).keys if k.startswith(prefix) and k not in keep]:
            s3.delete_object(bucket, key)
    return written


def bucket_deployment_adapter() -> None:
    """Route ``Custom::CDKBucketDeployment`` to an adapter doing the copy (after ``Custom::*`` is disabled)."""
    from moto.core.common_models import CloudFormationModel

    class CloudFormationBucketDeployment(EmulatedResource, CloudFormationModel):
        """``Custom::CDKBucketDeployment`` through moto's S3 backend."""

        CFN_TYPE = RESOURCE_TYPE

        def __init__(self, name: str, properties: dict[str, Any], keys: list[str]) -> None:
            self.name, self.keys = name, keys
            self.bucket = properties["DestinationBucketName"]
            self.retain = _flag(properties, "RetainOnDelete", True)

        @property
        def physical_resource_id(self) -> str:
            return f"aws.cdk.s3deployment.{self.name}"

        @classmethod
        def create(
            cls, name: str, properties: dict[str, Any], account_id: str, region_name: str
        ) -> CloudFormationBucketDeployment:
            return cls(name, properties, _copy(properties, account_id, region_name))

        @classmethod
        def update(
            cls, original: Any, name: str, properties: dict[str, Any], account_id: str, region_name: str
        ) -> CloudFormationBucketDeployment:
            return cls.create(original.name, properties, account_id, region_name)

        def delete(self, account_id: str, region_name: str) -> None:
            """What the handler does on Delete: nothing when retained, else remove what it wrote."""
            if self.retain:
                return
            s3 = _s3(account_id, region_name)
            for key in self.keys:
                s3.delete_object(self.bucket, key)

    route_custom_type(CloudFormationBucketDeployment)
