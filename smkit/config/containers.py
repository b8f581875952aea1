"""The ``image`` and ``model`` sections: the serving image sources and the SageMaker Model's containers.

AWS references:
- Model: https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-sagemaker-model.html
- ContainerDefinition: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ContainerDefinition.html
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from smkit.aws.limits import CHANNEL_NAME_LENGTH, MAX_CONTAINERS
from smkit.aws.patterns import AWS_NAME, CHANNEL_NAME, ECR_IMAGE_URI, IMAGE_TAG
from smkit.config.base import Frozen
from smkit.contract import TS_BATCH_SIZE, TS_MAX_BATCH_DELAY


class BuildImage(Frozen):
    """Build the serving image from a local Docker context (a CDK DockerImageAsset)."""

    source: Literal["build"]
    context: str | None = Field(
        None,
        min_length=1,
        description="Your own Docker build context, relative to the config file. Default: the kit's serving "
        "image (its Dockerfile, pinned requirements and runtime source, which the smkit package carries), "
        "built from any folder.",
    )
    dockerfile: str = Field(
        "Dockerfile",
        min_length=1,
        description="With context: the Dockerfile path relative to the context (docker build -f); a "
        "sibling <dockerfile>.dockerignore, if present, lists what the context leaves out. Every COPY/ADD "
        "source must be in the context (checked at synth).",
    )
    build_args: dict[str, str] = Field(default_factory=dict, description="Docker build arguments.")
    requirements: str | None = Field(
        None,
        min_length=1,
        description="A pip requirements file (relative to the config file; inside the context when you give "
        "one, copied into the kit's image context otherwise) whose "
        "packages this deployment's image installs (container/Dockerfile's IMAGE_REQUIREMENTS build "
        "argument), after container/requirements-extra.txt: what the models need and, with network "
        "isolation, could not install at container start; local runs install the same packages.",
    )


class EcrImage(Frozen):
    """An image already pushed to ECR under an immutable tag (what CI's publish_image prints)."""

    source: Literal["ecr"]
    repository: str | None = Field(
        None, description="Repository name; default: the repository of this kit's ECR stack."
    )
    tag: str = Field(pattern=IMAGE_TAG, description="Immutable image tag (not 'latest').")


class DlcImage(Frozen):
    """A full image URI, e.g. an AWS Deep Learning Container for scikit-learn or PyTorch inference."""

    source: Literal["dlc"]
    uri: str = Field(pattern=ECR_IMAGE_URI)


ImageSource = Annotated[BuildImage | EcrImage | DlcImage, Field(discriminator="source")]


class ModelDataSpec(Frozen):
    """Where a container's model data comes from.

    - ``archive``: a local ``model.tar.gz`` uploaded as a content-hashed asset (``ModelDataUrl``).
    - ``prefix``: a local directory uploaded uncompressed (``S3DataType: S3Prefix``, ``CompressionType: None``).
    - ``multi-model``: a local directory of ``*.tar.gz`` uploaded as one prefix (container ``Mode: MultiModel``).
    - ``s3``: model data already in S3, used where it is (no copy): ``uri`` ending ``.tar.gz`` is an archive
      (``ModelDataUrl``), ``uri`` ending ``/`` an uncompressed prefix (or, on a multi-model endpoint, the
      prefix of its ``*.tar.gz`` models). The bucket must be in the endpoint's region
      (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ContainerDefinition.html).
    - ``model-package``: a version of the model registry (``package``: its ARN, or ``GROUP/VERSION`` in the
      deployment's account and region), deployed as ``ModelPackageName``: the image and model data are the
      package's. ``uri`` is the S3 prefix its model data is under (what the execution role may read) and the
      container's image the package's image URI (what it may pull); ``smkit deploy`` checks both against the
      registry and deploys only an ``Approved`` package (docs/model-registry.md).
    """

    source: Literal["archive", "prefix", "multi-model", "s3", "model-package"]
    path: str | None = Field(
        None, min_length=1, description="Local path relative to the config file (not for source: s3)."
    )
    uri: str | None = Field(
        None,
        description="source: s3: s3://BUCKET/KEY.tar.gz (an archive) or s3://BUCKET/PREFIX/ "
        "(uncompressed, or a multi-model endpoint's models); the bucket must be in the endpoint's region. "
        "source: model-package: s3://BUCKET/PREFIX/ holding the package's model data (the role's read grant).",
    )
    package: str | None = Field(
        None,
        description="source: model-package only: the model package version, as its ARN "
        "(arn:aws:sagemaker:REGION:ACCOUNT:model-package/GROUP/VERSION) or GROUP/VERSION.",
    )
    kms_key_arn: str | None = Field(
        None,
        description="source: s3 or model-package: the KMS key encrypting the source objects (SSE-KMS), for "
        "kms:Decrypt.",
    )
    cache: Literal["enabled", "disabled"] | None = Field(
        None, description="MultiModelConfig.ModelCacheSetting; multi-model only. Default: enabled."
    )
    models: tuple[str, ...] | None = Field(
        None,
        description="source: multi-model only: the models of the set, each a model_code/NAME folder of the "
        "project (smkit init NAME --multi-model SET adds one); smkit package --config builds each as "
        "PATH/NAME.tar.gz (the TargetModel NAME.tar.gz). An archive put into PATH by other means is served too.",
    )
    accept_eula: bool = Field(
        False,
        description="source: s3 with an uncompressed prefix only: ModelDataSource.S3DataSource.ModelAccessConfig"
        ".AcceptEula: true, for gated weights whose license must be accepted before SageMaker downloads them "
        "(you accept that license by setting it). Default: false. "
        "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ModelAccessConfig.html",
    )

    @property
    def local_path(self) -> str:
        """``path`` of a local source; a ValueError for ``source: s3``, which has none."""
        if self.path is None:
            raise ValueError(f"model_data.source {self.source} has no local path (uri: {self.uri})")
        return self.path


class ModelDataChannel(Frozen):
    """One more source of model data for a container, mounted beside its model data: SageMaker puts it at
    ``/opt/ml/additional-model-data-sources/<channel>/`` before the container starts
    (ContainerDefinition.AdditionalModelDataSources, at most 5 per container:
    https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_AdditionalModelDataSource.html). A draft
    model for speculative decoding, an optimized build of the weights, or a lookup table the handler reads.

    The sources are those of ``model_data`` that are one piece of data:

    - ``prefix``: a local folder uploaded uncompressed (``S3DataType: S3Prefix``, ``CompressionType: None``);
    - ``archive``: a local ``.tar.gz`` uploaded as it is, or a local folder that ``smkit package`` packs into
      ``build/<config>/channels/<container>/<channel>.tar.gz`` first (``S3Object``, ``Gzip``: SageMaker
      extracts it);
    - ``s3``: data already in S3, used where it is: ``uri`` ending ``.tar.gz`` is an archive, ``uri`` ending
      ``/`` an uncompressed prefix.

    The container's environment names the folder by AWS's path (e.g. ``DRAFT_MODEL:
    /opt/ml/additional-model-data-sources/draft``); the local endpoint gives such a value the channel's
    folder on this machine (docs/channels.md).
    """

    channel: str = Field(
        description="ChannelName: 1-64 letters, digits, '.', '-' or '_', unique in the container; the folder "
        "name under /opt/ml/additional-model-data-sources/.",
        # Checked by smkit.config.model_data_rules.channels (a message naming the fix); here for editors.
        json_schema_extra={
            "pattern": CHANNEL_NAME,
            "minLength": CHANNEL_NAME_LENGTH[0],
            "maxLength": CHANNEL_NAME_LENGTH[1],
        },
    )
    source: Literal["archive", "prefix", "s3"] = Field(
        description="archive (a local .tar.gz, or a folder smkit package packs into one), prefix (a local "
        "folder uploaded uncompressed) or s3 (already in S3)."
    )
    path: str | None = Field(
        None,
        min_length=1,
        description="source: archive or prefix: the local folder (or, for archive, a .tar.gz file), relative "
        "to the config file.",
    )
    uri: str | None = Field(
        None,
        description="source: s3 only: s3://BUCKET/KEY.tar.gz (an archive) or s3://BUCKET/PREFIX/ "
        "(uncompressed); the bucket must be in the endpoint's region.",
    )
    kms_key_arn: str | None = Field(
        None,
        description="source: s3 only: the KMS key encrypting the objects (SSE-KMS), for kms:Decrypt.",
    )
    accept_eula: bool = Field(
        False,
        description="source: s3 with an uncompressed prefix only: S3DataSource.ModelAccessConfig.AcceptEula: "
        "true, for gated weights whose license must be accepted before SageMaker downloads them. Default: "
        "false. https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ModelAccessConfig.html",
    )


class Batching(Frozen):
    """Dynamic batching by smkit's serving runtime: concurrent invocations served by one ``predict_batch_fn``
    call (docs/handler-semantics.md). Written into the container's environment as
    ``SAGEMAKER_TS_BATCH_SIZE`` and ``SAGEMAKER_TS_MAX_BATCH_DELAY``, the variables AWS's PyTorch toolkit
    reads for the same two settings
    (https://github.com/aws/sagemaker-pytorch-inference-toolkit/blob/master/src/sagemaker_pytorch_serving_container/ts_parameters.py),
    so the local endpoint and SageMaker run the same thing."""

    max_batch_size: int = Field(
        ge=1, description="Most requests one predict_batch_fn call serves (SAGEMAKER_TS_BATCH_SIZE); 1: off."
    )
    max_batch_delay_ms: int = Field(
        100,
        ge=0,
        description="Longest wait for a batch to fill, from its first request's arrival, in ms "
        "(SAGEMAKER_TS_MAX_BATCH_DELAY); at most the invocation timeout. Default 100, as the toolkit.",
    )

    def environment(self) -> dict[str, str]:
        """The container variables these settings become."""
        return {
            TS_BATCH_SIZE: str(self.max_batch_size),
            TS_MAX_BATCH_DELAY: str(self.max_batch_delay_ms),
        }


class Container(Frozen):
    """One container of the SageMaker Model (ContainerDefinition)."""

    name: str = Field(pattern=AWS_NAME)
    hostname: str | None = Field(
        None, pattern=AWS_NAME, description="ContainerHostname; needed for direct mode."
    )
    image: ImageSource | None = Field(None, description="Overrides the top-level image for this container.")
    model_data: ModelDataSpec
    additional_model_data: tuple[ModelDataChannel, ...] = Field(
        (),
        description="More model data beside model_data, each mounted at "
        "/opt/ml/additional-model-data-sources/<channel>/ (AdditionalModelDataSources, at most 5): e.g. "
        "[{channel: draft, source: prefix, path: ../draft-model}]. Default: none.",
    )
    environment: dict[str, str] = Field(
        default_factory=dict,
        description="ContainerDefinition.Environment (<= 100 entries, <= 1024 bytes each).",
    )
    batching: Batching | None = Field(
        None, description="Dynamic batching (smkit's serving runtime); added to the environment."
    )


class ModelSpec(Frozen):
    """The SageMaker Model: one container, or 2-15 for a multi-container endpoint."""

    containers: list[Container] = Field(min_length=1, max_length=MAX_CONTAINERS)
    inference_mode: Literal["serial", "direct"] | None = Field(
        None, description="InferenceExecutionConfig.Mode; multi-container only."
    )
    network_isolation: bool = Field(True, description="EnableNetworkIsolation (not for serverless).")
