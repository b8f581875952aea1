"""Rules of ``model_data`` for ``source: s3`` (model data already in S3), each with its AWS page.

- ModelDataUrl is one gzip-compressed tar archive (``.tar.gz``) in a bucket of the endpoint's region:
  https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ContainerDefinition.html
- S3DataSource with ``S3DataType: S3Prefix`` and ``CompressionType: None``: the URI is a key prefix ending
  with ``/``: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_S3ModelDataSource.html
- A multi-model endpoint's ModelDataUrl is the prefix holding its ``*.tar.gz`` models:
  https://docs.aws.amazon.com/sagemaker/latest/dg/create-multi-model-endpoint.html
- IAM and key policies name keys by key ARN, never by alias:
  https://docs.aws.amazon.com/kms/latest/developerguide/cmks-in-iam-policies.html

A bucket's region cannot be known at synth; only a key ARN's region can, and an SSE-KMS object's key is in
its bucket's region, so a key from another region gives the bucket away.

``source: model-package`` names a model registry version: ContainerDefinition.ModelPackageName, whose
pattern (botocore's ``VersionedArnOrName``, :data:`MODEL_PACKAGE_NAME`) takes a package ARN or a name with
an optional ``/VERSION``; smkit takes versioned packages only (a registry package is a version of a group):
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ContainerDefinition.html and
https://docs.aws.amazon.com/sagemaker/latest/dg/model-registry-deploy.html
"""

from __future__ import annotations

from collections.abc import Iterable

from smkit.aws.patterns import KMS_KEY, PACKAGE_VERSION, S3_URI
from smkit.config.models import DeploymentConfig
from smkit.config.rules import Issue, set_fields

CONTAINER_URL = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ContainerDefinition.html"
S3_PREFIX_URL = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_S3ModelDataSource.html"
MULTI_MODEL_URL = "https://docs.aws.amazon.com/sagemaker/latest/dg/create-multi-model-endpoint.html"
KMS_ARN_URL = "https://docs.aws.amazon.com/kms/latest/developerguide/cmks-in-iam-policies.html"
# s3://BUCKET/KEY with an S3 bucket name (3-63 of a-z 0-9 . -) and a non-empty key:
# https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html
ARCHIVE_SUFFIX = ".tar.gz"
REGISTRY_URL = "https://docs.aws.amazon.com/sagemaker/latest/dg/model-registry-deploy.html"
# ContainerDefinition.ModelPackageName: botocore's VersionedArnOrName pattern, word for word
# (tests/config/test_config_model_package.py compares it with the installed service model).
MODEL_PACKAGE_NAME = (
    r"(arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:[a-z\-]*\/)?([a-zA-Z0-9]([a-zA-Z0-9-]){0,62})"
    r"(?<!-)(\/[0-9]{1,9})?"
)


def package_arn(package: str, *, partition: str, region: str, account: str) -> str:
    """The ARN of ``package`` (an ARN, or ``GROUP/VERSION`` of ``account`` and ``region``), as the template
    spells it (smkit.cdk.constructs.model_data.package_arn)."""
    if package.startswith("arn:"):
        return package
    return f"arn:{partition}:sagemaker:{region}:{account}:model-package/{package}"


def s3_kind(uri: str, *, multi_model_endpoint: bool) -> str | None:
    """What an S3 URI of ``source: s3`` is: ``multi-model`` (the prefix of a multi-model endpoint's models),
    ``prefix`` (uncompressed model data), ``archive`` (one ``.tar.gz``), or None (none of these forms)."""
    is_prefix = uri.endswith("/")
    if multi_model_endpoint:
        return "multi-model" if is_prefix else None
    if is_prefix:
        return "prefix"
    return "archive" if uri.endswith(ARCHIVE_SUFFIX) else None


def previous_s3_reads(current: Iterable[str], previous: Iterable[str]) -> list[tuple[str, bool]]:
    """``(uri, is_prefix)`` of each earlier release's S3 data that the deployment no longer names (``current``:
    its ``source: s3`` model data and adapters' ``artifact_url``, ``ResolvedDeployment.s3_data_uris``): what the
    execution role keeps reading. ValueError for a URI that is not ``s3://BUCKET/KEY`` or ``s3://BUCKET/PREFIX/``."""
    out = []
    for uri in sorted(set(previous) - set(current)):
        if not S3_URI.match(uri):
            raise ValueError(
                f"previous_s3_uris: {uri!r} is not s3://BUCKET/KEY or s3://BUCKET/PREFIX/ (the release history's "
                "model data and adapter locations)"
            )
        out.append((uri, uri.endswith("/")))
    return out


def s3_model_data(cfg: DeploymentConfig) -> Iterable[Issue]:
    """``uri`` / ``kms_key_arn`` only with ``source: s3``, in the forms SageMaker accepts; ``path`` otherwise."""
    mme = cfg.endpoint.type == "multi-model"
    for i, c in enumerate(cfg.model.containers):
        data, field = c.model_data, f"model.containers[{i}].model_data"
        if data.source == "model-package":
            continue  # model_package_data
        if data.package is not None:
            yield Issue(
                f"{field}.package",
                data.package,
                "package applies only to source: model-package (a model registry version); remove it or set "
                "source: model-package",
            )
        if data.source != "s3":
            if data.path is None:
                yield Issue(f"{field}.path", None, f"source {data.source} needs a local path")
            yield from set_fields(
                data,
                field,
                ("uri", "kms_key_arn"),
                lambda name: (
                    f"{name} applies only to source: s3 (model data already in S3); remove it or set "
                    "source: s3 and drop path"
                ),
            )
            continue
        if data.path is not None:
            yield Issue(f"{field}.path", data.path, "source s3 uses uri, not a local path; remove path")
        yield from uri_issues(data.uri, f"{field}.uri", mme=mme)
        if data.kms_key_arn is not None:
            yield from key_issues(data.kms_key_arn, f"{field}.kms_key_arn", region=cfg.region)


def uri_issues(uri: str | None, field: str, *, mme: bool) -> Iterable[Issue]:
    """``uri`` (of model data in S3) is an archive ``s3://BUCKET/KEY.tar.gz`` or a prefix ``s3://BUCKET/PREFIX/``
    (on a multi-model endpoint (``mme``): a prefix)."""
    if uri is None:
        yield Issue(
            field,
            None,
            "source s3 needs uri: s3://BUCKET/KEY.tar.gz (an archive) or s3://BUCKET/PREFIX/ (uncompressed)",
        )
        return
    if not S3_URI.match(uri):
        yield Issue(
            field,
            uri,
            "not an S3 object or prefix URI; use s3://BUCKET/KEY.tar.gz or s3://BUCKET/PREFIX/ "
            "(a lowercase bucket name and a key) "
            f"({CONTAINER_URL})",
        )
        return
    if s3_kind(uri, multi_model_endpoint=mme) is not None:
        return
    if mme:
        yield Issue(
            field,
            uri,
            "a multi-model endpoint's model data is the prefix holding its *.tar.gz models; end the "
            f"uri with / (e.g. s3://BUCKET/models/) ({MULTI_MODEL_URL})",
        )
        return
    yield Issue(
        field,
        uri,
        "neither an archive nor a prefix: ModelDataUrl must be a gzip-compressed tar ending .tar.gz "
        f"({CONTAINER_URL}); an uncompressed prefix (S3Prefix, CompressionType None) must end with / "
        f"({S3_PREFIX_URL}). Point at the model.tar.gz or add the trailing /",
    )


def key_issues(arn: str, field: str, *, region: str | None) -> Iterable[Issue]:
    """``arn`` is a KMS key ARN (not an alias) in the deployment's ``region``."""
    match = KMS_KEY.match(arn)
    if match is None:
        yield Issue(
            field,
            arn,
            "not a KMS key ARN; give arn:aws:kms:REGION:ACCOUNT:key/KEY-ID (an alias ARN grants nothing in "
            f"IAM statements: `aws kms describe-key --key-id alias/NAME` prints the key ARN) ({KMS_ARN_URL})",
        )
    elif region is not None and match["region"] != region:
        yield Issue(
            field,
            arn,
            f"the key is in {match['region']}, so the bucket it encrypts is too, but the deployment is in "
            f"{region}; SageMaker reads model data only from a bucket in the endpoint's region: copy the "
            f"model data to a {region} bucket ({CONTAINER_URL})",
        )


def model_package_data(cfg: DeploymentConfig) -> Iterable[Issue]:
    """``source: model-package``: a versioned package (ARN or GROUP/VERSION) in the deployment's region, the
    S3 prefix of its model data, an image URI (``image.source: dlc``: the package's image), on a realtime,
    serverless or async endpoint."""
    for i, c in enumerate(cfg.model.containers):
        data, field = c.model_data, f"model.containers[{i}].model_data"
        if data.source != "model-package":
            continue
        if data.path is not None:
            yield Issue(f"{field}.path", data.path, "a model package brings its own model data; remove path")
        match = PACKAGE_VERSION.match(data.package or "")
        if data.package is None or match is None:
            yield Issue(
                f"{field}.package",
                data.package,
                "name a model package version: arn:aws:sagemaker:REGION:ACCOUNT:model-package/GROUP/VERSION "
                f"or GROUP/VERSION (e.g. churn/3; `aws sagemaker list-model-packages --model-package-group-name "
                f"GROUP` lists them) ({REGISTRY_URL})",
            )
        elif cfg.region is not None and match["region"] is not None and match["region"] != cfg.region:
            yield Issue(
                f"{field}.package",
                data.package,
                f"the package is in {match['region']} and the deployment in {cfg.region}; CreateModel takes a "
                f"package of the endpoint's region: copy it into a {cfg.region} group ({REGISTRY_URL})",
            )
        if data.uri is None or not S3_URI.match(data.uri) or not data.uri.endswith("/"):
            yield Issue(
                f"{field}.uri",
                data.uri,
                "give the S3 prefix the package's model data is under, ending with / (e.g. the training "
                "jobs' output prefix s3://BUCKET/churn/): the execution role may read it, and smkit deploy "
                "checks the package's ModelDataUrl is there",
            )
        if data.kms_key_arn is not None:
            yield from key_issues(data.kms_key_arn, f"{field}.kms_key_arn", region=cfg.region)
        image = cfg.image_of(c)
        if image.source != "dlc":
            where = f"model.containers[{i}].image" if c.image is not None else "image"
            yield Issue(
                f"{where}.source",
                image.source,
                "a model package runs the image it names: give it as image: {source: dlc, uri: "
                "<the package's InferenceSpecification.Containers[0].Image>} (the execution role may pull "
                "it; smkit deploy checks they are the same)",
            )
        if cfg.endpoint.type in ("multi-model", "inference-components"):
            yield Issue(
                f"{field}.source",
                "model-package",
                f"smkit deploys a model package on a realtime, serverless or async endpoint, not on "
                f"endpoint.type {cfg.endpoint.type}",
            )
