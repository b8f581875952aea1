"""The deployment configuration tree: one YAML file per deployment (variant x environment).

Every model is frozen and forbids unknown keys, so a typo is an error instead of a silently ignored setting.
Field names are the YAML keys. Single-field limits live here (``Field`` constraints); rules that involve
several fields live in :mod:`smkit.config.rules`.

AWS references:
- Model: https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-sagemaker-model.html
- EndpointConfig: https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-sagemaker-endpointconfig.html
- Endpoint: https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-sagemaker-endpoint.html
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from smkit.config.components import InferenceComponentsSpec, ShadowVariant

# CloudFormation name patterns (VariantName, ContainerHostname, ...): alphanumerics and hyphens, <= 63.
AWS_NAME = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
INSTANCE_TYPE = r"^ml\.[a-z0-9]+\.[a-z0-9]+$"
# An image in an AWS Deep Learning Containers (or any ECR) registry: ACCOUNT.dkr.ecr.REGION.amazonaws.com/NAME:TAG
ECR_IMAGE_URI = (
    r"^\d{12}\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com(\.cn)?/[a-z0-9._/-]+(:[\w.-]+|@sha256:[0-9a-f]{64})$"
)
KMS_KEY_ARN = r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:(key|alias)/[\w/-]+$"


class Frozen(BaseModel):
    """Base of every config node: immutable, unknown keys rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


# --- image -----------------------------------------------------------------------------------------------


class BuildImage(Frozen):
    """Build the serving image from a local Docker context (a CDK DockerImageAsset)."""

    source: Literal["build"]
    context: str = Field("container", description="Docker build context, relative to the repository root.")
    dockerfile: str = Field(
        "Dockerfile",
        min_length=1,
        description="Dockerfile path relative to the context (docker build -f); a sibling "
        "<dockerfile>.dockerignore, if present, lists what the context leaves out.",
    )
    build_args: dict[str, str] = Field(default_factory=dict, description="Docker build arguments.")


class EcrImage(Frozen):
    """An image already pushed to ECR under an immutable tag (what CI's publish_image prints)."""

    source: Literal["ecr"]
    repository: str | None = Field(
        None, description="Repository name; default: the repository of this kit's ECR stack."
    )
    tag: str = Field(pattern=r"^[\w][\w.-]{0,127}$", description="Immutable image tag (not 'latest').")


class DlcImage(Frozen):
    """A full image URI, e.g. an AWS Deep Learning Container for scikit-learn or PyTorch inference."""

    source: Literal["dlc"]
    uri: str = Field(pattern=ECR_IMAGE_URI)


ImageSource = Annotated[BuildImage | EcrImage | DlcImage, Field(discriminator="source")]


# --- model -----------------------------------------------------------------------------------------------


class ModelData(Frozen):
    """Where a container's model data comes from.

    - ``archive``: a local ``model.tar.gz`` uploaded as a content-hashed asset (``ModelDataUrl``).
    - ``prefix``: a local directory uploaded uncompressed (``S3DataType: S3Prefix``, ``CompressionType: None``).
    - ``multi-model``: a local directory of ``*.tar.gz`` uploaded as one prefix (container ``Mode: MultiModel``).
    """

    source: Literal["archive", "prefix", "multi-model"]
    path: str = Field(min_length=1, description="Local path relative to the repository root.")
    cache: Literal["enabled", "disabled"] | None = Field(
        None, description="MultiModelConfig.ModelCacheSetting; multi-model only. Default: enabled."
    )


class Container(Frozen):
    """One container of the SageMaker Model (ContainerDefinition)."""

    name: str = Field(pattern=AWS_NAME)
    hostname: str | None = Field(
        None, pattern=AWS_NAME, description="ContainerHostname; needed for direct mode."
    )
    image: ImageSource | None = Field(None, description="Overrides the top-level image for this container.")
    model_data: ModelData
    environment: dict[str, str] = Field(
        default_factory=dict,
        description="ContainerDefinition.Environment (<= 100 entries, <= 1024 bytes each).",
    )


class ModelSpec(Frozen):
    """The SageMaker Model: one container, or 2-15 for a multi-container endpoint."""

    containers: list[Container] = Field(min_length=1, max_length=15)
    inference_mode: Literal["serial", "direct"] | None = Field(
        None, description="InferenceExecutionConfig.Mode; multi-container only."
    )
    network_isolation: bool = Field(True, description="EnableNetworkIsolation (not for serverless).")


# --- endpoint --------------------------------------------------------------------------------------------


class Autoscaling(Frozen):
    """Target tracking on ``sagemaker:variant:DesiredInstanceCount``.

    Realtime, multi-model and multi-container track ``SageMakerVariantInvocationsPerInstance``; async tracks
    ``ApproximateBacklogSizePerInstance`` and may scale to zero.
    """

    min_capacity: int = Field(ge=0, le=1000)
    max_capacity: int = Field(ge=1, le=1000)
    target_invocations_per_instance: int | None = Field(None, ge=1)
    target_backlog_per_instance: float | None = Field(None, gt=0)
    scale_in_cooldown_seconds: int = Field(300, ge=0, le=3600)
    scale_out_cooldown_seconds: int = Field(60, ge=0, le=3600)


class Variant(Frozen):
    """An instance-backed production variant."""

    name: str = Field(pattern=AWS_NAME)
    instance_type: str = Field(pattern=INSTANCE_TYPE)
    initial_instance_count: int = Field(1, ge=1, le=1000)
    initial_weight: float = Field(1.0, gt=0, description="Relative traffic weight (> 0).")
    volume_size_gb: int | None = Field(None, ge=1, le=512)
    model_data_download_timeout_seconds: int | None = Field(None, ge=60, le=3600)
    container_startup_health_check_timeout_seconds: int | None = Field(None, ge=60, le=3600)
    autoscaling: Autoscaling | None = None


class ServerlessAutoscaling(Frozen):
    """Target tracking on ``sagemaker:variant:DesiredProvisionedConcurrency``."""

    min_capacity: int = Field(ge=1, le=200)
    max_capacity: int = Field(ge=1, le=200)
    target_utilization: float = Field(
        0.7, gt=0, le=1, description="SageMakerVariantProvisionedConcurrencyUtilization target."
    )


class ServerlessSpec(Frozen):
    """ServerlessConfig of the single serverless variant (docs/serverless-async.md)."""

    variant_name: str = Field("main", pattern=AWS_NAME)
    memory_size_mb: Literal[1024, 2048, 3072, 4096, 5120, 6144]
    max_concurrency: int = Field(ge=1, le=200)
    provisioned_concurrency: int | None = Field(None, ge=1, le=200)
    autoscaling: ServerlessAutoscaling | None = None


class AsyncSpec(Frozen):
    """AsyncInferenceConfig: results and failures go to prefixes of the endpoint's own bucket."""

    output_prefix: str = Field("async/output", pattern=r"^[\w!\-.*'()/]+$")
    failure_prefix: str = Field("async/failure", pattern=r"^[\w!\-.*'()/]+$")
    notifications: bool = Field(False, description="Create SNS success and error topics.")
    max_concurrent_invocations_per_instance: int | None = Field(None, ge=1, le=1000)


class Deployment(Frozen):
    """Deployment guardrails: blue/green traffic shifting with auto-rollback on the endpoint's alarms."""

    strategy: Literal["all-at-once", "canary", "linear"] = "all-at-once"
    canary_size_percent: int | None = Field(None, ge=1, le=99)
    linear_step_percent: int | None = Field(None, ge=1, le=99)
    wait_interval_seconds: int = Field(300, ge=0, le=3600)
    termination_wait_seconds: int = Field(0, ge=0, le=3600)
    max_execution_timeout_seconds: int | None = Field(None, ge=600, le=14400)
    auto_rollback: bool = True


class DataCapture(Frozen):
    """DataCaptureConfig: request/response capture to the endpoint's bucket (not for serverless)."""

    enabled: bool = True
    sampling_percentage: int = Field(100, ge=0, le=100)
    capture: tuple[Literal["input", "output"], ...] = Field(("input", "output"), min_length=1)
    prefix: str = Field("data-capture", pattern=r"^[\w!\-.*'()/]+$")


class EndpointSpec(Frozen):
    """The endpoint type and everything that belongs to its EndpointConfig and Endpoint."""

    type: Literal["realtime", "serverless", "multi-model", "multi-container", "async", "inference-components"]
    variants: list[Variant] = Field(default_factory=list, max_length=10)
    serverless: ServerlessSpec | None = None
    async_: AsyncSpec | None = Field(None, alias="async")
    deployment: Deployment = Field(default_factory=lambda: Deployment())
    data_capture: DataCapture | None = None
    inference_components: InferenceComponentsSpec | None = Field(
        None,
        description="inference-components only: instance scaling and the components (smkit.config.components).",
    )
    shadow_variants: list[ShadowVariant] = Field(
        default_factory=list,
        max_length=1,
        description="realtime only: ShadowProductionVariants (at most one, beside exactly one production variant).",
    )


# --- security, monitoring --------------------------------------------------------------------------------


class Kms(Frozen):
    """Encryption of the endpoint's storage volumes, capture and async output: a new key or a given one."""

    create: bool = False
    key_arn: str | None = Field(None, pattern=KMS_KEY_ARN)


class Vpc(Frozen):
    """VpcConfig for the model containers (not for serverless)."""

    subnet_ids: list[str] = Field(min_length=1, max_length=16)
    security_group_ids: list[str] = Field(min_length=1, max_length=5)


class Security(Frozen):
    kms: Kms = Field(default_factory=lambda: Kms(create=True))
    vpc: Vpc | None = None


class Monitoring(Frozen):
    """CloudWatch alarms (also the auto-rollback alarms) and a dashboard."""

    alarms: bool = True
    latency_p99_ms: int = Field(1000, ge=1)
    error_5xx_threshold: int = Field(
        5, ge=1, description="Invocation5XXErrors per minute that trip the alarm."
    )
    error_4xx_threshold: int = Field(
        50, ge=1, description="Invocation4XXErrors per minute that trip the alarm."
    )
    backlog_age_seconds: int | None = Field(None, ge=60, description="Async only: oldest request age alarm.")
    evaluation_periods: int = Field(3, ge=1, le=60)


# --- CI/CD pipeline (cdk synth -c pipeline=true) ---------------------------------------------------------
ACCOUNT_ID = r"^\d{12}$"
REGION = r"^[a-z]{2}(-[a-z]+)+-\d$"
REPOSITORY = r"^[\w.-]+/[\w.-]+$"
CONNECTION_ARN = (
    r"^arn:aws[a-z-]*:(codestar-connections|codeconnections):[a-z0-9-]+:\d{12}:connection/[\w-]+$"
)


class ConnectionSource(Frozen):
    """A GitHub / GitLab / Bitbucket repository through an AWS CodeConnections (CodeStar) connection.

    https://docs.aws.amazon.com/dtconsole/latest/userguide/welcome-connections.html
    """

    type: Literal["connection"]
    connection_arn: str = Field(pattern=CONNECTION_ARN)
    repository: str = Field(pattern=REPOSITORY, description="owner/name, e.g. my-org/smkit")
    branch: str = Field("main", min_length=1)


class CodeCommitSource(Frozen):
    """An AWS CodeCommit repository (by name) in the pipeline's account."""

    type: Literal["codecommit"]
    repository: str = Field(pattern=r"^[\w.-]{1,100}$")
    branch: str = Field("main", min_length=1)


PipelineSource = Annotated[ConnectionSource | CodeCommitSource, Field(discriminator="type")]


class StageTarget(Frozen):
    """An account and region a pipeline stage deploys into (bootstrapped with ``--trust`` the pipeline account)."""

    account: str = Field(pattern=ACCOUNT_ID)
    region: str = Field(pattern=REGION)


class PipelineSpec(Frozen):
    """CDK Pipelines: source -> gates + synth -> staging (+ smoke test) -> manual approval -> production."""

    account: str = Field(pattern=ACCOUNT_ID, description="The tooling account that runs the pipeline.")
    region: str = Field(pattern=REGION)
    source: PipelineSource
    staging: StageTarget
    production: StageTarget


class DeploymentConfig(Frozen):
    """One deployment: what ``cdk deploy`` builds and what ``smkit local-endpoint`` runs."""

    name: str = Field(pattern=r"^[a-z][a-z0-9-]{0,39}$", description="Prefix of stack names; lowercase.")
    environment: Literal["dev", "staging", "prod"] = "dev"
    account: str | None = Field(None, pattern=r"^\d{12}$")
    region: str | None = Field(None, pattern=r"^[a-z]{2}(-[a-z]+)+-\d$")
    description: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    image: ImageSource
    model: ModelSpec
    endpoint: EndpointSpec
    security: Security = Field(default_factory=lambda: Security())
    monitoring: Monitoring = Field(default_factory=lambda: Monitoring())
    pipeline: PipelineSpec | None = Field(
        None, description="CI/CD pipeline (``-c pipeline=true``); ignored by plain ``cdk deploy``."
    )
