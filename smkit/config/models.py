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
# Family, optional hyphenated qualifier (ml.p6-b200.48xlarge), size.
INSTANCE_TYPE = r"^ml\.[a-z0-9]+(-[a-z0-9]+)*\.[a-z0-9]+$"
# An image in an AWS Deep Learning Containers (or any ECR) registry: ACCOUNT.dkr.ecr.REGION.amazonaws.com/NAME:TAG
ECR_IMAGE_URI = (
    r"^\d{12}\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com(\.cn)?/[a-z0-9._/-]+(:[\w.-]+|@sha256:[0-9a-f]{64})$"
)
KMS_KEY_ARN = r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:(key|alias)/[\w/-]+$"
SNS_TOPIC_ARN = r"^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]+$"


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
    routing: Literal["least-outstanding-requests", "random"] | None = Field(
        None,
        description="How SageMaker spreads requests over the variant's instances "
        "(ProductionVariant.RoutingConfig.RoutingStrategy: LEAST_OUTSTANDING_REQUESTS or RANDOM). "
        "Default: not set, SageMaker's default (RANDOM). "
        "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantRoutingConfig.html",
    )
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
    include_response_in_notifications: bool = Field(
        False,
        description="Copy the inference response into the success/error notifications "
        "(AsyncInferenceNotificationConfig.IncludeInferenceResponseIn). Default: false, so subscribers get "
        "the S3 location only and payloads stay in the encrypted bucket. "
        "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_AsyncInferenceNotificationConfig.html",
    )
    max_concurrent_invocations_per_instance: int | None = Field(None, ge=1, le=1000)


class Deployment(Frozen):
    """Deployment guardrails: blue/green traffic shifting with auto-rollback on the endpoint's alarms."""

    strategy: Literal["all-at-once", "canary", "linear"] = "all-at-once"
    canary_size_percent: int | None = Field(
        None, ge=1, le=100, description="Canary: share of the new fleet's capacity turned on first (1-50)."
    )
    linear_step_percent: int | None = Field(
        None, ge=1, le=100, description="Linear: share of the new fleet's capacity per step (10-50)."
    )
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


class EmailSubscription(Frozen):
    """Alarm notifications by email (the address must confirm the subscription once)."""

    type: Literal["email"]
    address: str = Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class HttpsSubscription(Frozen):
    """Alarm notifications POSTed to an HTTPS endpoint (e.g. a paging service's SNS integration URL)."""

    type: Literal["https"]
    url: str = Field(pattern=r"^https://[^\s]+$")


class TopicSubscription(Frozen):
    """Alarm notifications also published to an existing SNS topic (e.g. a central operations topic).

    That topic's policy must allow ``cloudwatch.amazonaws.com`` to publish, and its KMS key (if any) must
    allow CloudWatch to use it: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html
    """

    type: Literal["sns"]
    topic_arn: str = Field(pattern=SNS_TOPIC_ARN)


AlarmSubscription = Annotated[
    EmailSubscription | HttpsSubscription | TopicSubscription, Field(discriminator="type")
]


class Monitoring(Frozen):
    """CloudWatch alarms, their SNS topic and who gets it, the auto-rollback alarms, logs and a dashboard.

    Operational alarms (to people): per variant, 5XX error rate, 4XX error rate and p99 ModelLatency of the
    whole variant; async: age of the oldest queued request. Rollback alarms (to the deployment guardrails):
    per variant, 5XX error rate and p99 ModelLatency of the *new* fleet only (metrics dimensioned by the new
    EndpointConfigName), so an incident on the old fleet does not roll back its own fix.
    https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-configuration.html
    """

    alarms: bool = True
    latency_p99_ms: int = Field(
        1000, ge=1, description="p99 ModelLatency (ms) that trips the latency alarms."
    )
    error_5xx_percent: float = Field(
        1.0,
        gt=0,
        le=100,
        description="Invocation5XXErrors as a percentage of requests that trips the 5XX alarms. Default 1.",
    )
    error_4xx_percent: float = Field(
        10.0,
        gt=0,
        le=100,
        description="Invocation4XXErrors as a percentage of requests that trips the 4XX alarm (operational "
        "only: client errors never roll a deployment back). Default 10.",
    )
    backlog_age_seconds: int | None = Field(None, ge=60, description="Async only: oldest request age alarm.")
    evaluation_periods: int = Field(3, ge=1, le=60)
    subscriptions: list[AlarmSubscription] = Field(
        default_factory=list,
        description="Who gets the alarm topic's notifications: email addresses, HTTPS endpoints, or other "
        "SNS topics. Default: none (the topic's ARN is a stack output; subscribe later). "
        "https://docs.aws.amazon.com/sns/latest/dg/sns-create-subscribe-endpoint-to-topic.html",
    )
    log_retention_days: int = Field(
        90,
        description="Retention of the endpoint's CloudWatch log group (/aws/sagemaker/Endpoints/NAME) and of "
        "the deployment helpers' logs; one of CloudWatch Logs' retention values. Default 90. "
        "https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutRetentionPolicy.html",
    )


class Storage(Frozen):
    """Lifecycle of the endpoint's data bucket (captured requests, async results, model data sets).

    https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-lifecycle-mgmt.html
    """

    expire_days: dict[str, int] = Field(
        default_factory=dict,
        description="Days after which objects under a prefix of the data bucket expire, e.g. "
        "{data-capture: 90, async/output: 30}. The prefix must be one this deployment writes (data capture, "
        "async input/output/failure). Default: none (kept until you delete them).",
    )
    noncurrent_version_days: int = Field(
        30,
        ge=1,
        description="Days after which overwritten or deleted object versions expire (the bucket is "
        "versioned). Default 30.",
    )


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
    storage: Storage = Field(default_factory=lambda: Storage())
    pipeline: PipelineSpec | None = Field(
        None, description="CI/CD pipeline (``-c pipeline=true``); ignored by plain ``cdk deploy``."
    )
