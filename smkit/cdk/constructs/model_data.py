"""Where a container's model data comes from, and how it reaches S3.

- :meth:`ModelData.from_archive`: one ``model.tar.gz`` copied under a content-hashed prefix of the endpoint
  bucket, keeping its file name (``ModelDataUrl``).
- :meth:`ModelData.from_prefix`: an uncompressed directory copied under a content-hashed prefix of the
  endpoint bucket (``ModelDataSource.S3DataSource`` with ``S3Prefix`` / ``CompressionType: None``).
- :meth:`ModelData.from_multi_model`: a folder of ``*.tar.gz`` copied as one set under a content-hashed
  prefix (container ``Mode: MultiModel``; clients pass ``TargetModel`` = file name, docs/multi-model.md).
- :meth:`ModelData.from_s3`: model data already in S3 (a training job's output, weights too large to copy
  through Lambda), used where it is: no copy, only the read grants.
- :meth:`ModelData.from_model_package`: a model registry version (``ModelPackageName``): the package names
  its image and model data; the role may read the S3 prefix that data is under (docs/model-registry.md).

The three local sources land in the deployment's own bucket, encrypted with the deployment's key (the CDK bootstrap assets
bucket only stages them). Binding grants the execution role ``s3:GetObject`` on the copies of that
container's model data, of every release (``models/<id>/*``, and ``s3:ListBucket`` limited to it), so an old
fleet still serving during an update, or rolled back to, reads its own; the role's grant on the key covers
decryption. The copy
is CDK's BucketDeployment, a Lambda-backed custom resource (:mod:`smkit.cdk.constructs.model_copy`); the
prefix embeds the content hash so changed data is a new prefix and the Model is replaced.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from smkit.cdk.constructs.acknowledge import nag_environment
from smkit.cdk.constructs.execution_role import acknowledge_grant, grant_statement
from smkit.cdk.constructs.model_copy import copy_into_bucket

MISSING_HINT = (
    "package it first: `smkit package --config CONFIG` (in the kit's repository: `make package-model`)"
)


@dataclass(frozen=True)
class BoundModelData:
    """What a ContainerDefinition needs: exactly one of ``model_data_url`` / ``model_data_source`` /
    ``model_package_name`` (then the package names the image too, and the definition has none)."""

    model_data_url: str | None = None
    model_package_name: str | None = None
    model_data_source: sagemaker.CfnModel.ModelDataSourceProperty | None = None
    multi_model: bool = False
    cache_enabled: bool = True
    dependency: Construct | None = None


@dataclass(frozen=True)
class BoundChannel:
    """One ``AdditionalModelDataSources`` entry: the channel's name and its S3 data source (an archive:
    ``S3Object`` with ``Gzip``; a prefix: ``S3Prefix`` with ``None``).
    https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_AdditionalModelDataSource.html"""

    name: str
    s3_uri: str
    s3_data_type: Literal["S3Object", "S3Prefix"]
    compression_type: Literal["Gzip", "None"]
    accept_eula: bool = False
    dependency: Construct | None = None

    def definition(self) -> dict[str, Any]:
        """The entry as CreateModel takes it."""
        source: dict[str, Any] = {
            "S3Uri": self.s3_uri,
            "S3DataType": self.s3_data_type,
            "CompressionType": self.compression_type,
        }
        if self.accept_eula:
            source["ModelAccessConfig"] = {"AcceptEula": True}
        return {"ChannelName": self.name, "S3DataSource": source}


def as_channel(name: str, bound: BoundModelData) -> BoundChannel:
    """The channel ``name`` of model data bound as a container's would be: an archive's URL, or a prefix's
    S3 data source."""
    if bound.model_data_url is not None:
        return BoundChannel(name, bound.model_data_url, "S3Object", "Gzip", dependency=bound.dependency)
    source = bound.model_data_source
    assert source is not None, f"channel {name}: an archive or a prefix"
    s3_source = source.s3_data_source
    assert isinstance(s3_source, sagemaker.CfnModel.S3DataSourceProperty)
    access = s3_source.model_access_config
    eula = isinstance(access, sagemaker.CfnModel.ModelAccessConfigProperty) and access.accept_eula is True
    return BoundChannel(name, s3_source.s3_uri, "S3Prefix", "None", eula, bound.dependency)


@dataclass(frozen=True)
class _Binding:
    """What :meth:`ModelData.bind` was given: the scope and id of what it adds, the role it grants, the
    endpoint bucket the local sources are copied into, and the copy handler's log group."""

    scope: Construct
    id_: str
    grantee: iam.IGrantable
    bucket: s3.IBucket
    log_group: logs.ILogGroup | None

    def grant_read(self, uri: str, *, prefix: bool, kms_key_arn: str | None, why: str) -> None:
        """:func:`grant_read_s3` of ``uri`` to the role, statements named after this binding's id."""
        grant_read_s3(
            self.scope, self.grantee, self.id_, uri, prefix=prefix, kms_key_arn=kms_key_arn, why=why
        )


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

    @staticmethod
    def from_model_package(package: str, *, data_uri: str, kms_key_arn: str | None = None) -> ModelData:
        """A model package version (its ARN, or ``GROUP/VERSION`` of the stack's account and region) whose
        model data is under the S3 prefix ``data_uri`` (read grant; ``kms_key_arn``: its objects' key)."""
        return _ModelPackage(package, data_uri=data_uri, kms_key_arn=kms_key_arn)

    def bind(
        self,
        scope: Construct,
        id_: str,
        *,
        grantee: iam.IGrantable,
        bucket: s3.IBucket,
        log_group: logs.ILogGroup | None = None,
    ) -> BoundModelData:
        """Upload under ``scope``, grant ``grantee`` (the execution role) read access, and describe the result.

        ``log_group`` receives the logs of the copy handler of directory sets (default: a group without
        retention, created by Lambda)."""
        return self._bind(_Binding(scope, id_, grantee, bucket, log_group))

    @abstractmethod
    def _bind(self, at: _Binding) -> BoundModelData:
        """:meth:`bind` with its arguments in one value."""


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
    def _bind(self, at: _Binding) -> BoundModelData:
        self._require(directory=False)
        # A directory asset of the archive's folder holding only the archive: its hash covers the file's name
        # and bytes, and the copy keeps the name (a rollback downloads it under that name, same hash).
        copy = copy_into_bucket(
            at.scope,
            at.id_,
            self.path.parent,
            size=self.path.stat().st_size,
            bucket=at.bucket,
            log_group=at.log_group,
            exclude=["*", ".*", f"!{self.path.name}"],
        )
        key = f"{copy.prefix}{self.path.name}"
        copy.grant_read(at.grantee)
        return BoundModelData(
            model_data_url=f"s3://{at.bucket.bucket_name}/{key}", dependency=copy.deployment
        )


class _DirectorySet(_LocalData):
    def __init__(self, path: Path, what: str, *, multi_model: bool, cache_enabled: bool) -> None:
        super().__init__(path, what)
        self.multi_model = multi_model
        self.cache_enabled = cache_enabled

    def _bind(self, at: _Binding) -> BoundModelData:
        self._require(directory=True)
        if self.multi_model and not any(self.path.glob("*.tar.gz")):
            raise FileNotFoundError(f"model_data.path {self.path}: no *.tar.gz models in it; {MISSING_HINT}")
        size = sum(f.stat().st_size for f in self.path.rglob("*") if f.is_file())
        copy = copy_into_bucket(
            at.scope, at.id_, self.path, size=size, bucket=at.bucket, log_group=at.log_group
        )
        prefix, deployment = copy.prefix, copy.deployment
        copy.grant_read(at.grantee)
        return _prefix_data(
            f"s3://{at.bucket.bucket_name}/{prefix}",
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

    def _bind(self, at: _Binding) -> BoundModelData:
        prefix = self.kind != "archive"
        at.grant_read(
            self.uri,
            prefix=prefix,
            kms_key_arn=self.kms_key_arn,
            why=f"the configured model data prefix {self.uri}; that is the point.",
        )
        if not prefix:
            return BoundModelData(model_data_url=self.uri)
        return _prefix_data(
            self.uri,
            multi_model=self.multi_model,
            cache_enabled=self.cache_enabled,
            accept_eula=self.accept_eula,
        )


class _ModelPackage(ModelData):
    """A model registry version: ``ModelPackageName`` and the read grant on its data's prefix."""

    def __init__(self, package: str, *, data_uri: str, kms_key_arn: str | None) -> None:
        super().__init__("model-package")
        self.package = package
        self.data_uri = data_uri
        self.kms_key_arn = kms_key_arn

    def _bind(self, at: _Binding) -> BoundModelData:
        at.grant_read(
            self.data_uri,
            prefix=True,
            kms_key_arn=self.kms_key_arn,
            why=f"the prefix {self.data_uri} holding model package {self.package}'s model data.",
        )
        return BoundModelData(model_package_name=package_arn(at.scope, self.package))


def package_arn(scope: Construct, package: str) -> str:
    """The ARN of a model package version given as its ARN or as ``GROUP/VERSION`` (the stack's account and
    region: arn:PARTITION:sagemaker:REGION:ACCOUNT:model-package/GROUP/VERSION)."""
    if package.startswith("arn:"):
        return package
    return cdk.Stack.of(scope).format_arn(
        service="sagemaker",
        resource="model-package",
        resource_name=package,
        arn_format=cdk.ArnFormat.SLASH_RESOURCE_NAME,
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


def grant_read_s3(
    scope: Construct,
    grantee: iam.IGrantable,
    id_: str,
    uri: str,
    *,
    prefix: bool,
    kms_key_arn: str | None = None,
    why: str | None = None,
) -> iam.Grant:
    """``s3:GetObject`` (statement ``Read<id_>``) on the object ``s3://BUCKET/KEY``, or on every object under
    ``s3://BUCKET/PREFIX/`` plus ``s3:ListBucket`` limited to it (``List<id_>``): data SageMaker downloads
    from a bucket of the user's (model data, adapter weights, earlier releases' data). ``kms_key_arn``: the
    objects are under SSE-KMS, decrypted with the grantee's identity, so it needs ``kms:Decrypt``
    (https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingKMSEncryption.html). ``why`` ends the
    cdk-nag acknowledgement of a prefix's ``*`` ("SageMaker reads every object under ...")."""
    name, _, key = uri[len("s3://") :].partition("/")
    # The stack's partition: literal with a concrete region, as cdk-nag spells it in finding ids.
    bucket_arn = f"arn:{cdk.Stack.of(scope).partition}:s3:::{name}"
    objects = f"{key}*" if prefix else key
    grant = grant_statement(
        grantee,
        iam.PolicyStatement(
            sid=f"Read{id_}", actions=["s3:GetObject"], resources=[f"{bucket_arn}/{objects}"]
        ),
    )
    if kms_key_arn is not None:
        grant = grant.combine(
            grant_statement(
                grantee,
                iam.PolicyStatement(sid=f"Decrypt{id_}", actions=["kms:Decrypt"], resources=[kms_key_arn]),
            )
        )
    if not prefix:
        return grant
    grant = grant.combine(
        grant_statement(
            grantee,
            iam.PolicyStatement(
                sid=f"List{id_}",
                actions=["s3:ListBucket"],
                resources=[bucket_arn],
                conditions={"StringLike": {"s3:prefix": [objects]}},
            ),
        )
    )
    partition, _, _ = nag_environment(scope)
    acknowledge_grant(
        grantee,
        {
            f"AwsSolutions-IAM5[Resource::arn:{partition}:s3:::{name}/{objects}]": (
                f"Statement Read{id_}: SageMaker reads every object under {why or f'the configured prefix {uri}.'}"
            )
        },
    )
    return grant
