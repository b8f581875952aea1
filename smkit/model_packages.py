"""The model registry side of ``model_data.source: model-package``: what a package version holds, whether it
may be deployed, and the deployment a local run serves from it.

A container that names a model package (``ContainerDefinition.ModelPackageName``) runs the image and the model
data of the package's inference specification
(https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeModelPackage.html). SageMaker creates
a model from a package whatever its approval status; the registry's status is the team's decision
(``Approved | Rejected | PendingManualApproval``,
https://docs.aws.amazon.com/sagemaker/latest/dg/model-registry-approve.html), so ``smkit deploy``, the
emulator's deploy and the pipeline check it first (:func:`deploy_problems`) and deploy only ``Approved``
versions. The same check holds the config's image and data prefix (what the execution role may pull and read,
smkit.cdk.constructs.model_data) to the package's. The local endpoint serves a package with the image and
model data the registry names (:func:`with_packages`), read from S3 like ``source: s3``. docs/model-registry.md.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from smkit.config.containers import ECR_IMAGE_URI
from smkit.config.model_data_rules import package_arn, s3_kind
from smkit.config.resolved import ResolvedContainer, ResolvedDeployment
from smkit.config.resolved.deployment import DataKind, ResolvedModelData
from smkit.config.resolved.images import ResolvedImage, dlc_runtime

APPROVED = "Approved"
ECR_URI = re.compile(ECR_IMAGE_URI)
APPROVE_URL = "https://docs.aws.amazon.com/sagemaker/latest/dg/model-registry-approve.html"


class RegistryError(ValueError):
    """A model package that cannot be deployed or served: not found, not approved, or not what the config says."""


@dataclass(frozen=True)
class PackageVersion:
    """What DescribeModelPackage says of a version: its ARN, approval status, and the image and model data of
    its inference specification's (first) container."""

    arn: str
    status: str
    image: str
    model_data: str | None
    compressed: bool = True

    @staticmethod
    def of(answer: dict[str, Any]) -> PackageVersion:
        """From a DescribeModelPackage answer."""
        containers = (answer.get("InferenceSpecification") or {}).get("Containers") or [{}]
        first = containers[0]
        source = (first.get("ModelDataSource") or {}).get("S3DataSource") or {}
        data = first.get("ModelDataUrl") or source.get("S3Uri")
        return PackageVersion(
            arn=answer["ModelPackageArn"],
            status=answer.get("ModelApprovalStatus", "PendingManualApproval"),
            image=first.get("Image", ""),
            model_data=data,
            compressed=source.get("CompressionType", "Gzip") != "None",
        )


def describe(client: Any, arn: str) -> PackageVersion:
    """The version ``arn`` of the registry ``client`` (a boto3 SageMaker client) reads; RegistryError when it has
    none or cannot be read."""
    from botocore.exceptions import BotoCoreError, ClientError  # botocore only when a registry is read

    try:
        return PackageVersion.of(client.describe_model_package(ModelPackageName=arn))
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise RegistryError(
            f"model package {arn}: the registry answered {error.get('Code')}: {error.get('Message')} "
            "(`aws sagemaker list-model-packages --model-package-group-name GROUP` lists its versions)"
        ) from None
    except BotoCoreError as exc:
        raise RegistryError(f"model package {arn}: cannot read the registry: {exc}") from None


def _containers(deployment: ResolvedDeployment) -> list[tuple[int, ResolvedContainer]]:
    return [(i, c) for i, c in enumerate(deployment.containers) if c.model_data.kind == "model-package"]


def deploy_problems(
    deployment: ResolvedDeployment, client: Any, *, partition: str, region: str, account: str
) -> list[str]:
    """Why the model packages of ``deployment`` must not be deployed (empty: every one may): a version the
    registry does not have, one that is not ``Approved``, or one whose image or model data is not what the
    config names (the execution role could not pull or read it)."""
    problems = []
    for i, container in _containers(deployment):
        data = container.model_data
        assert data.package is not None and data.uri is not None  # smkit.config.model_data_rules
        field = f"model.containers[{i}].model_data.package"
        arn = package_arn(data.package, partition=partition, region=region, account=account)
        try:
            version = describe(client, arn)
        except RegistryError as exc:
            problems.append(f"{field}: {exc}")
            continue
        if version.status != APPROVED:
            problems.append(
                f"{field}: model package {version.arn} is {version.status}, and smkit deploys only Approved "
                "versions; once it is reviewed, approve it with `aws sagemaker update-model-package "
                f"--model-package-arn {version.arn} --model-approval-status Approved` ({APPROVE_URL})"
            )
        expected = container.image.uri
        if version.image != expected:
            problems.append(
                f"{field}: model package {version.arn} runs image {version.image}, and the config's image is "
                f"{expected}: the execution role may pull only the config's; set the container's image to "
                f"{{source: dlc, uri: {version.image}}}"
            )
        if version.model_data is None or not version.model_data.startswith(data.uri):
            problems.append(
                f"{field}: model package {version.arn}'s model data {version.model_data} is not under "
                f"model_data.uri {data.uri}, the prefix the execution role may read; set uri to a prefix "
                "that holds it"
            )
    return problems


def require_deployable(
    deployment: ResolvedDeployment, client: Any, *, partition: str, region: str, account: str
) -> None:
    """:func:`deploy_problems` as one RegistryError (nothing when the config names no package)."""
    problems = deploy_problems(deployment, client, partition=partition, region=region, account=account)
    if problems:
        raise RegistryError(f"{deployment.name}: " + "; ".join(problems))


def with_packages(
    deployment: ResolvedDeployment,
    client_factory: Callable[[], Any],
    *,
    partition: str = "aws",
    region: str,
    account: str,
) -> ResolvedDeployment:
    """``deployment`` with each model package's container running the image and model data the registry
    names (what SageMaker runs for ``ModelPackageName``), for a local run; ``deployment`` itself when it names
    no package. ``client_factory`` makes the SageMaker client (only called when there is a package)."""
    found = _containers(deployment)
    if not found:
        return deployment
    client = client_factory()
    replaced = {}
    for i, container in found:
        data = container.model_data
        assert data.package is not None
        version = describe(
            client, package_arn(data.package, partition=partition, region=region, account=account)
        )
        if version.model_data is None or s3_kind(version.model_data, multi_model_endpoint=False) is None:
            raise RegistryError(
                f"model.containers[{i}].model_data.package: model package {version.arn} names no model data "
                f"the local endpoint can read ({version.model_data}): an s3:// archive (.tar.gz) or prefix (/)"
            )
        if not ECR_URI.match(version.image):
            raise RegistryError(
                f"model.containers[{i}].model_data.package: model package {version.arn} names image "
                f"{version.image!r}, not an ECR image URI (ACCOUNT.dkr.ecr.REGION.amazonaws.com/NAME:TAG)"
            )
        image = ResolvedImage("dlc", runtime=dlc_runtime(version.image), uri=version.image)
        kind: DataKind = (
            "archive" if version.model_data.endswith(".tar.gz") and version.compressed else "prefix"
        )
        replaced[container.name] = dataclasses.replace(
            container,
            image=image,
            model_data=ResolvedModelData(kind, uri=version.model_data, kms_key_arn=data.kms_key_arn),
        )
    containers = tuple(replaced.get(c.name, c) for c in deployment.containers)
    return dataclasses.replace(deployment, containers=containers)


def served_packages(
    deployment: ResolvedDeployment, *, region: str, endpoint_url: str | None = None
) -> ResolvedDeployment:
    """:func:`with_packages` with boto3's SageMaker client of ``region`` (``endpoint_url``: the emulator's,
    else boto3's environment); a ``GROUP/VERSION`` package is of the caller's account (STS)."""
    if not _containers(deployment):
        return deployment
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    def client(service: str) -> Any:
        return boto3.client(service, region_name=region, endpoint_url=endpoint_url)

    try:
        account = deployment.account or client("sts").get_caller_identity()["Account"]
    except (ClientError, BotoCoreError) as exc:
        raise RegistryError(f"cannot tell the account of the model registry (STS): {exc}") from None
    return with_packages(
        deployment, lambda: client("sagemaker"), region=deployment.region or region, account=account
    )
