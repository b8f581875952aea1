"""Where a container's model data comes from, and how it reaches S3.

- :meth:`ModelData.from_archive`: one ``model.tar.gz`` copied under a content-hashed prefix of the endpoint
  bucket, keeping its file name (``ModelDataUrl``).
- :meth:`ModelData.from_prefix`: an uncompressed directory copied under a content-hashed prefix of the
  endpoint bucket (``ModelDataSource.S3DataSource`` with ``S3Prefix`` / ``CompressionType: None``).
- :meth:`ModelData.from_multi_model`: a folder of ``*.tar.gz`` copied as one set under a content-hashed
  prefix (container ``Mode: MultiModel``; clients pass ``TargetModel`` = file name, docs/multi-model.md).
- :meth:`ModelData.from_s3`: model data already in S3 (a training job's output, weights too large to copy
  through Lambda), used where it is: no copy, only the read grants.

The three local sources land in the deployment's own bucket, encrypted with the deployment's key (the CDK bootstrap assets
bucket only stages them). Binding grants the execution role ``s3:GetObject`` on the copies of that
container's model data, of every release (``models/<id>/*``, and ``s3:ListBucket`` limited to it), so an old
fleet still serving during an update, or rolled back to, reads its own; the role's grant on the key covers
decryption. The copy
is CDK's BucketDeployment, a Lambda-backed custom resource; the prefix embeds the content hash so changed
data is a new prefix and the Model is replaced.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_s3_deployment as s3_deployment
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from smkit.cdk.constructs.acknowledge import acknowledge, logical_id_of, nag_environment
from smkit.cdk.constructs.execution_role import ExecutionRole

MISSING_HINT = "run `make package-model` to build the example archives"
# The copy handler downloads the zipped set and extracts it in /tmp: room for both, plus headroom.
# Lambda's ephemeral storage is 512-10240 MB:
# https://docs.aws.amazon.com/lambda/latest/dg/configuration-ephemeral-storage.html
EPHEMERAL_MB = (512, 10240)
HEADROOM_MB = 512
MIB = 1024 * 1024


@dataclass(frozen=True)
class BoundModelData:
    """What a ContainerDefinition needs: exactly one of ``model_data_url`` / ``model_data_source``."""

    model_data_url: str | None = None
    model_data_source: sagemaker.CfnModel.ModelDataSourceProperty | None = None
    multi_model: bool = False
    cache_enabled: bool = True
    dependency: Construct | None = None


class ModelData(ABC):
    """A model data source; bind it to get the ContainerDefinition fields and the read grant."""

    def __init__(self, what: str) -> None:
        self.what = what

    @staticmethod
    def from_archive(path: Path) -> ModelData:
        """A ``model.tar.gz`` file."""
        return _Archive(path, "archive")

    @staticmethod
    def from_prefix(path: Path) -> ModelData:
        """A directory served uncompressed."""
        return _DirectorySet(path, "prefix", multi_model=False, cache_enabled=True)

    @staticmethod
    def from_multi_model(path: Path, *, cache_enabled: bool = True) -> ModelData:
        """A directory of ``*.tar.gz``, one per model (MultiModelConfig.ModelCacheSetting from ``cache_enabled``)."""
        return _DirectorySet(path, "multi-model", multi_model=True, cache_enabled=cache_enabled)

    @staticmethod
    def from_s3(
        uri: str,
        *,
        kind: Literal["archive", "prefix", "multi-model"],
        kms_key_arn: str | None = None,
        cache_enabled: bool = True,
        accept_eula: bool = False,
    ) -> ModelData:
        """Model data already in S3: an archive ``s3://BUCKET/KEY.tar.gz``, or an uncompressed or multi-model
        prefix ``s3://BUCKET/PREFIX/`` (``kind``, from :mod:`smkit.config.resolved`), encrypted with
        ``kms_key_arn`` if given; ``accept_eula`` (uncompressed prefixes only) sets
        ModelAccessConfig.AcceptEula for gated weights
        (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ModelAccessConfig.html)."""
        return _InS3(
            uri, kind=kind, kms_key_arn=kms_key_arn, cache_enabled=cache_enabled, accept_eula=accept_eula
        )

    @abstractmethod
    def bind(
        self,
        scope: Construct,
        id_: str,
        *,
        role: ExecutionRole,
        bucket: s3.IBucket,
        log_group: logs.ILogGroup | None = None,
    ) -> BoundModelData:
        """Upload under ``scope``, grant ``role`` read access, and describe the result.

        ``log_group`` receives the logs of the copy handler of directory sets (default: a group without
        retention, created by Lambda)."""


def ephemeral_storage_mb(path: Path, size: int) -> int:
    """/tmp the copy handler needs for ``size`` bytes of model data: zipped plus extracted, plus headroom."""
    need = math.ceil(2 * size / MIB) + HEADROOM_MB
    low, high = EPHEMERAL_MB
    if need > high:
        raise ValueError(
            f"model_data.path {path}: {size / MIB:.0f} MB of model data needs {need} MB of /tmp to copy "
            f"(zipped + extracted), more than the {high} MB a Lambda function can have; upload it to S3 "
            "yourself and use it where it is (model_data: {source: s3, uri: s3://BUCKET/KEY.tar.gz or "
            "s3://BUCKET/PREFIX/}, docs/cloudformation.md), or split it over several containers"
        )
    return max(low, need)


@dataclass(frozen=True)
class _Copy:
    """Model data copied under a content-hashed prefix of the endpoint bucket."""

    prefix: str
    deployment: s3_deployment.BucketDeployment
    releases: str  # models/<id>/: the copies of every release of this container's model data


def _copy_into_bucket(
    scope: Construct,
    id_: str,
    asset_path: Path,
    *,
    size: int,
    bucket: s3.IBucket,
    log_group: logs.ILogGroup | None,
    exclude: list[str] | None = None,
) -> _Copy:
    """Publish ``asset_path`` (a directory, minus ``exclude``) as a zipped asset and have CDK's
    BucketDeployment extract it under ``models/<id>/<content hash>/`` of ``bucket``.

    The prefix embeds the asset hash, so changed data is a new prefix (and the Model is replaced); an old
    prefix is never pruned nor deleted, so a rollback finds its release's objects where they were."""
    holder = Construct(scope, id_)
    asset = s3_assets.Asset(holder, "Asset", path=str(asset_path), exclude=exclude)
    prefix = f"models/{id_}/{asset.asset_hash}/"
    deployment = s3_deployment.BucketDeployment(
        holder,
        "Upload",
        sources=[s3_deployment.Source.bucket(asset.bucket, asset.s3_object_key)],
        destination_bucket=bucket,
        destination_key_prefix=prefix,
        extract=True,
        prune=False,
        retain_on_delete=True,
        memory_limit=1024,
        ephemeral_storage_size=cdk.Size.mebibytes(ephemeral_storage_mb(asset_path, size)),
        log_group=log_group,
    )
    _acknowledge_deployment_handler(deployment, bucket)
    return _Copy(prefix, deployment, f"models/{id_}/")


def _grant_releases(role: ExecutionRole, bucket: s3.IBucket, copy: _Copy) -> None:
    """The role reads every release's copy of this container's model data, not only the current one.

    The policy changes before the endpoint: during a blue/green or rolling update the old fleet still serves
    (and autoscales, and a multi-model endpoint loads models on demand, every request with its cache
    disabled), and after a rollback the old release runs again, each reading its own content-hashed prefix.
    Granting only the new prefix would break them (docs/cloudformation.md, "Day-2 updates")."""
    releases = copy.releases
    role.add_to_policy(
        iam.PolicyStatement(actions=["s3:GetObject"], resources=[bucket.arn_for_objects(f"{releases}*")])
    )
    role.add_to_policy(
        iam.PolicyStatement(
            actions=["s3:ListBucket"],
            resources=[bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [f"{releases}*"]}},
        )
    )
    role.acknowledge(
        {
            f"AwsSolutions-IAM5[Resource::<{logical_id_of(bucket)}.Arn>/{releases}*]": (
                "Read access to every release's content-hashed copy of this container's model data: the old "
                "fleet keeps reading its own during an update and after a rollback."
            )
        },
    )


class _LocalData(ModelData):
    """Model data in a local file or directory, copied into the endpoint bucket."""

    def __init__(self, path: Path, what: str) -> None:
        super().__init__(what)
        self.path = path

    def _require(self, *, directory: bool) -> None:
        ok = self.path.is_dir() if directory else self.path.is_file()
        if not ok:
            kind = "directory" if directory else "file"
            raise FileNotFoundError(
                f"model_data.path {self.path}: no such {kind} (source: {self.what}); {MISSING_HINT}"
            )


class _Archive(_LocalData):
    def bind(
        self,
        scope: Construct,
        id_: str,
        *,
        role: ExecutionRole,
        bucket: s3.IBucket,
        log_group: logs.ILogGroup | None = None,
    ) -> BoundModelData:
        self._require(directory=False)
        # A directory asset of the archive's folder holding only the archive: its hash covers the file's name
        # and bytes, and the copy keeps the name (a rollback downloads it under that name, same hash).
        copy = _copy_into_bucket(
            scope,
            id_,
            self.path.parent,
            size=self.path.stat().st_size,
            bucket=bucket,
            log_group=log_group,
            exclude=["*", ".*", f"!{self.path.name}"],
        )
        key = f"{copy.prefix}{self.path.name}"
        _grant_releases(role, bucket, copy)
        return BoundModelData(model_data_url=f"s3://{bucket.bucket_name}/{key}", dependency=copy.deployment)


class _DirectorySet(_LocalData):
    def __init__(self, path: Path, what: str, *, multi_model: bool, cache_enabled: bool) -> None:
        super().__init__(path, what)
        self.multi_model = multi_model
        self.cache_enabled = cache_enabled

    def bind(
        self,
        scope: Construct,
        id_: str,
        *,
        role: ExecutionRole,
        bucket: s3.IBucket,
        log_group: logs.ILogGroup | None = None,
    ) -> BoundModelData:
        self._require(directory=True)
        if self.multi_model and not any(self.path.glob("*.tar.gz")):
            raise FileNotFoundError(f"model_data.path {self.path}: no *.tar.gz models in it; {MISSING_HINT}")
        size = sum(f.stat().st_size for f in self.path.rglob("*") if f.is_file())
        copy = _copy_into_bucket(scope, id_, self.path, size=size, bucket=bucket, log_group=log_group)
        prefix, deployment = copy.prefix, copy.deployment
        _grant_releases(role, bucket, copy)
        return _prefix_data(
            f"s3://{bucket.bucket_name}/{prefix}",
            multi_model=self.multi_model,
            cache_enabled=self.cache_enabled,
            dependency=deployment,
        )


class _InS3(ModelData):
    """Model data already in S3: the ContainerDefinition names it; the role may read exactly it."""

    def __init__(
        self, uri: str, *, kind: str, kms_key_arn: str | None, cache_enabled: bool, accept_eula: bool = False
    ) -> None:
        super().__init__("s3")
        self.accept_eula = accept_eula
        self.uri = uri
        self.kind = kind
        self.kms_key_arn = kms_key_arn
        self.multi_model = kind == "multi-model"
        self.cache_enabled = cache_enabled

    def bind(
        self,
        scope: Construct,
        id_: str,
        *,
        role: ExecutionRole,
        bucket: s3.IBucket,
        log_group: logs.ILogGroup | None = None,
    ) -> BoundModelData:
        name, _, key = self.uri[len("s3://") :].partition("/")
        prefix = self.kind != "archive"
        # The stack's partition: literal with a concrete region, as cdk-nag spells it in finding ids.
        bucket_arn = f"arn:{cdk.Stack.of(scope).partition}:s3:::{name}"
        objects = f"{key}*" if prefix else key
        role.add_to_policy(
            iam.PolicyStatement(
                sid=f"Read{id_}", actions=["s3:GetObject"], resources=[f"{bucket_arn}/{objects}"]
            )
        )
        if self.kms_key_arn is not None:
            # Objects under SSE-KMS are decrypted with the caller's identity: the role needs kms:Decrypt.
            # https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingKMSEncryption.html
            role.add_to_policy(
                iam.PolicyStatement(
                    sid=f"Decrypt{id_}", actions=["kms:Decrypt"], resources=[self.kms_key_arn]
                )
            )
        if not prefix:
            return BoundModelData(model_data_url=self.uri)
        role.add_to_policy(
            iam.PolicyStatement(
                sid=f"List{id_}",
                actions=["s3:ListBucket"],
                resources=[bucket_arn],
                conditions={"StringLike": {"s3:prefix": [objects]}},
            )
        )
        partition, _, _ = nag_environment(scope)
        role.acknowledge(
            {
                f"AwsSolutions-IAM5[Resource::arn:{partition}:s3:::{name}/{objects}]": (
                    f"Statement Read{id_}: SageMaker reads every object under the configured model data "
                    f"prefix {self.uri}; that is the point."
                )
            },
        )
        return _prefix_data(
            self.uri,
            multi_model=self.multi_model,
            cache_enabled=self.cache_enabled,
            accept_eula=self.accept_eula,
        )


def _prefix_data(
    url: str,
    *,
    multi_model: bool,
    cache_enabled: bool,
    dependency: Construct | None = None,
    accept_eula: bool = False,
) -> BoundModelData:
    """The container fields for a prefix: the models' prefix (multi-model) or uncompressed model data."""
    if multi_model:
        return BoundModelData(
            model_data_url=url, multi_model=True, cache_enabled=cache_enabled, dependency=dependency
        )
    source = sagemaker.CfnModel.ModelDataSourceProperty(
        s3_data_source=sagemaker.CfnModel.S3DataSourceProperty(
            s3_uri=url,
            s3_data_type="S3Prefix",
            compression_type="None",
            model_access_config=(
                sagemaker.CfnModel.ModelAccessConfigProperty(accept_eula=True) if accept_eula else None
            ),
        )
    )
    return BoundModelData(model_data_source=source, dependency=dependency)


HANDLER_REASONS = {
    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]": (
        "CDK's BucketDeployment handler only writes its own logs with this AWS managed policy."
    ),
    "AwsSolutions-L1": "The BucketDeployment handler runtime is pinned by aws-cdk-lib, not by this kit.",
    "HIPAA.Security-LambdaConcurrency": "Runs only during CloudFormation deployments; no concurrency to reserve.",
    "NIST.800.53.R5-LambdaConcurrency": "Runs only during CloudFormation deployments; no concurrency to reserve.",
    "HIPAA.Security-LambdaDLQ": "Invoked synchronously by CloudFormation, which reports failures itself.",
    "NIST.800.53.R5-LambdaDLQ": "Invoked synchronously by CloudFormation, which reports failures itself.",
    "HIPAA.Security-LambdaInsideVPC": "Copies between two S3 buckets over TLS; no VPC resources involved.",
    "NIST.800.53.R5-LambdaInsideVPC": "Copies between two S3 buckets over TLS; no VPC resources involved.",
}


def _acknowledge_deployment_handler(
    deployment: s3_deployment.BucketDeployment, deployment_bucket: s3.IBucket
) -> None:
    """Acknowledge the findings on CDK's shared BucketDeployment handler, once per stack."""
    handler = deployment.handler_role.node.scope  # the stack-wide singleton function owning the role
    assert handler is not None
    # The function already references its role (GetAtt); CDK's extra DependsOn is cfn-lint W3005.
    function_resource = handler.node.default_child
    policy = deployment.handler_role.node.try_find_child("DefaultPolicy")
    policy_resource = policy.node.default_child if policy is not None else None
    if isinstance(function_resource, cdk.CfnResource) and isinstance(policy_resource, cdk.CfnResource):
        function_resource.add_override("DependsOn", [policy_resource.logical_id])
    acknowledge(handler, HANDLER_REASONS)
    partition, region, account = nag_environment(deployment)
    copy = (
        "CDK's BucketDeployment grants its copy handler these on the bootstrap asset bucket and on the whole "
        "endpoint bucket: read, write and delete of every object there, including captured requests and async "
        "results (CDK offers no per-prefix grant). The handler runs only during deployments, copies only into "
        "its content-hashed models/ prefix and never prunes (prune=False, retain_on_delete=True)."
    )
    findings = [
        "Action::kms:GenerateDataKey*",
        "Action::kms:ReEncrypt*",
        "Action::s3:Abort*",
        "Action::s3:DeleteObject*",
        "Action::s3:GetBucket*",
        "Action::s3:GetObject*",
        "Action::s3:List*",
        f"Resource::<{logical_id_of(deployment_bucket)}.Arn>/*",
        f"Resource::arn:{partition}:s3:::cdk-hnb659fds-assets-{account}-{region}/*",
    ]
    reasons = {f"AwsSolutions-IAM5[{f}]": copy for f in findings}
    inline = (
        "CDK's BucketDeployment handler role carries its grants as an inline policy; it has no other use."
    )
    reasons["HIPAA.Security-IAMNoInlinePolicy"] = inline
    reasons["NIST.800.53.R5-IAMNoInlinePolicy"] = inline
    acknowledge(deployment.handler_role, reasons)
