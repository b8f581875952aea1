"""The ``endpoint`` section: the endpoint type, its variants (instance, serverless, async), deployment
guardrails and data capture; inference components and shadow variants are in :mod:`smkit.config.components`.

AWS references:
- EndpointConfig: https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-sagemaker-endpointconfig.html
- Endpoint: https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-sagemaker-endpoint.html
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, ConfigDict, Field, WithJsonSchema, model_validator

from smkit.aws.instances import INSTANCE_TYPE
from smkit.aws.limits import (
    ASYNC_CONCURRENCY_RANGE,
    CONTENT_TYPE_MAX_LENGTH,
    EXECUTION_TIMEOUT_RANGE_S,
    MAX_CAPTURE_CONTENT_TYPES,
    MAX_INSTANCE_POOLS,
    MAX_PRODUCTION_VARIANTS,
    MAX_SHADOW_VARIANTS,
    METRICS_PUBLISH_FREQUENCIES_S,
    MIN_CAPACITY_SIZE,
    MIN_INSTANCE_COUNT,
    MIN_VARIANT_WEIGHT,
    MODEL_DOWNLOAD_TIMEOUT_RANGE_S,
    POOL_PRIORITY_RANGE,
    PROVISION_TIMEOUT_RANGE_S,
    SAMPLING_PERCENT_RANGE,
    SERVERLESS_CONCURRENCY_RANGE,
    SERVERLESS_MEMORY_MB,
    STARTUP_HEALTH_CHECK_RANGE_S,
    VOLUME_SIZE_RANGE_GB,
    WAIT_INTERVAL_RANGE_S,
)
from smkit.aws.patterns import AWS_NAME, MEDIA_TYPE, ML_RESERVATION_ARN, S3_KEY_PREFIX
from smkit.config.base import Frozen
from smkit.config.components import InferenceComponentsSpec, ShadowVariant
from smkit.config.scaling import Autoscaling

VARIANT_URL = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariant.html"
CAPACITY_URL = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantCapacityReservationConfig.html"
ROLLING_URL = "https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-rolling.html"
POOLS_URL = "https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-heterogeneous.html"
POOL_URL = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InstancePool.html"
CAPTURE_URL = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CaptureContentTypeHeader.html"
# ProductionVariant.InferenceAmiVersion: the AMIs SageMaker offers (driver / CUDA / Neuron versions).
InferenceAmiVersion = Literal[
    "al2-ami-sagemaker-inference-gpu-2",
    "al2-ami-sagemaker-inference-gpu-2-1",
    "al2-ami-sagemaker-inference-gpu-3-1",
    "al2-ami-sagemaker-inference-neuron-2",
    "al2023-ami-sagemaker-inference-gpu-4-1",
]
INFERENCE_AMI_VERSIONS: tuple[str, ...] = get_args(InferenceAmiVersion)
METRICS_URL = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_MetricsConfig.html"
CORE_DUMP_URL = (
    "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantCoreDumpConfig.html"
)


def one_of(allowed: tuple[int, ...], unit: str) -> AfterValidator:
    """A validator refusing an integer outside ``allowed`` (AWS's values, from :mod:`smkit.aws.limits`)."""

    def check(value: int) -> int:
        if value not in allowed:
            raise ValueError(
                f"{value} {unit} is not one AWS accepts; use one of {', '.join(map(str, allowed))}"
            )
        return value

    return AfterValidator(check)


# MetricsConfig.MetricPublishFrequencyInSeconds and MetricsEndpoint.MetricPublishFrequencyInSeconds.
PublishFrequency = Annotated[
    int,
    one_of(METRICS_PUBLISH_FREQUENCIES_S, "seconds"),
    WithJsonSchema({"enum": list(METRICS_PUBLISH_FREQUENCIES_S), "type": "integer"}),
]
# ProductionVariantServerlessConfig.MemorySizeInMB.
ServerlessMemory = Annotated[
    int,
    one_of(SERVERLESS_MEMORY_MB, "MB"),
    WithJsonSchema({"enum": list(SERVERLESS_MEMORY_MB), "type": "integer"}),
]


class CapacityReservation(Frozen):
    """ProductionVariant.CapacityReservationConfig: place the variant's instances in an ML capacity
    reservation (a training plan or reserved capacity for p5 / p6 instances) and nowhere else."""

    ml_reservation_arn: str = Field(
        pattern=ML_RESERVATION_ARN,
        description="MlReservationArn: the reservation's ARN (its region is the endpoint's). "
        f"CapacityReservationPreference is capacity-reservations-only, the only value AWS offers. {CAPACITY_URL}",
    )


class InstancePool(Frozen):
    """ProductionVariant.InstancePools entry: one instance type SageMaker may provision, by priority."""

    instance_type: str = Field(pattern=INSTANCE_TYPE, description=f"InstanceType of the pool. {POOL_URL}")
    priority: int = Field(
        ge=POOL_PRIORITY_RANGE[0],
        le=POOL_PRIORITY_RANGE[1],
        description=f"Priority 1-5, 1 first: SageMaker provisions from the lowest value it has capacity for. {POOL_URL}",
    )


def _type_or_pools(schema: dict[str, Any]) -> None:
    """JSON Schema: instance_type or instance_pools, exactly one (the model fills instance_type from the pools)."""
    schema["required"] = [r for r in schema.get("required", []) if r != "instance_type"]
    schema["allOf"] = [{"oneOf": [{"required": ["instance_type"]}, {"required": ["instance_pools"]}]}]


class EndpointMetrics(Frozen):
    """MetricsConfig of the endpoint config, written into every template with each value explicit.

    The defaults are AWS's for a new endpoint configuration: detailed observability on (since June 17, 2026),
    enhanced metrics off, publishing every 60 s. With detailed observability SageMaker scrapes each
    container's Prometheus endpoint (``/metrics`` on port 8080, which smkit's runtime serves:
    docs/observability.md). https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_MetricsConfig.html
    """

    detailed_observability: bool = Field(
        True,
        description="EnableDetailedObservability: container metrics scraped from /metrics, per-GPU and per-instance "
        f"host metrics, component placement metrics. Default: true (AWS's default). {METRICS_URL}",
    )
    enhanced_metrics: bool = Field(
        False,
        description="EnableEnhancedMetrics: utilization and invocation metrics per instance and container "
        f"(InstanceId, ContainerId dimensions). Default: false (AWS's default). {METRICS_URL}",
    )
    publish_frequency_seconds: PublishFrequency = Field(
        60,
        description=f"MetricPublishFrequencyInSeconds: {', '.join(map(str, METRICS_PUBLISH_FREQUENCIES_S))}. "
        f"Default: 60 (AWS's default). {METRICS_URL}",
    )


class CoreDumps(Frozen):
    """ProductionVariant.CoreDumpConfig: SageMaker writes a crashed container's core dump to the deployment's
    data bucket under ``prefix``, encrypted with the deployment's KMS key; the execution role gets
    ``s3:PutObject`` there.
    https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantCoreDumpConfig.html"""

    prefix: str = Field(
        "core-dumps",
        pattern=S3_KEY_PREFIX,
        description=f"Prefix of the data bucket the core dumps go to. Default: core-dumps. {CORE_DUMP_URL}",
    )


class Variant(Frozen):
    """An instance-backed production variant.

    With ``instance_pools`` the variant has no InstanceType of its own: ``instance_type`` is then the
    top-priority pool's type (what the local endpoint and the alarms take as the variant's type).
    """

    model_config = ConfigDict(
        frozen=True, extra="forbid", populate_by_name=True, json_schema_extra=_type_or_pools
    )

    name: str = Field(pattern=AWS_NAME)
    instance_type: str = Field(
        pattern=INSTANCE_TYPE,
        description="InstanceType. Required unless instance_pools is given; with instance_pools leave it out "
        "(it is then the priority-1 pool's type).",
    )
    instance_pools: tuple[InstancePool, ...] | None = Field(
        None,
        min_length=1,
        max_length=MAX_INSTANCE_POOLS,
        description="InstancePools: up to 5 {instance_type, priority} entries in place of instance_type; "
        "SageMaker falls back to the next priority on insufficient capacity (real-time and async endpoints, "
        f"and the instances of inference components). Default: unset (one instance type). {POOLS_URL}",
    )
    instance_provision_timeout_seconds: int | None = Field(
        None,
        ge=PROVISION_TIMEOUT_RANGE_S[0],
        le=PROVISION_TIMEOUT_RANGE_S[1],
        description="VariantInstanceProvisionTimeoutInSeconds (300-3600): how long SageMaker tries every pool "
        f"before the operation fails. instance_pools only. Default: unset (SageMaker's). {POOLS_URL}",
    )
    initial_instance_count: int = Field(1, ge=MIN_INSTANCE_COUNT)
    initial_weight: float = Field(
        1.0,
        ge=MIN_VARIANT_WEIGHT,
        description="InitialVariantWeight: the variant's share of the traffic is its weight over the sum of all "
        "variants' weights; 0 or more, not 0 for every variant (a variant of weight 0 takes only calls that name "
        "it in TargetVariant). Default 1. "
        "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariant.html",
    )
    routing: Literal["least-outstanding-requests", "random"] | None = Field(
        None,
        description="How SageMaker spreads requests over the variant's instances "
        "(ProductionVariant.RoutingConfig.RoutingStrategy: LEAST_OUTSTANDING_REQUESTS or RANDOM). "
        "Default: not set, SageMaker's default (RANDOM). "
        "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantRoutingConfig.html",
    )
    volume_size_gb: int | None = Field(None, ge=VOLUME_SIZE_RANGE_GB[0], le=VOLUME_SIZE_RANGE_GB[1])
    model_data_download_timeout_seconds: int | None = Field(
        None, ge=MODEL_DOWNLOAD_TIMEOUT_RANGE_S[0], le=MODEL_DOWNLOAD_TIMEOUT_RANGE_S[1]
    )
    container_startup_health_check_timeout_seconds: int | None = Field(
        None, ge=STARTUP_HEALTH_CHECK_RANGE_S[0], le=STARTUP_HEALTH_CHECK_RANGE_S[1]
    )
    inference_ami_version: InferenceAmiVersion | None = Field(
        None,
        description="ProductionVariant.InferenceAmiVersion: pins the instance's AMI (NVIDIA driver and CUDA, or "
        "Neuron) so an image built for one CUDA version keeps its driver; GPU AMIs for ml.g*/ml.p* "
        f"instances, the Neuron AMI for ml.inf*/ml.trn*. Default: unset (SageMaker's current AMI). {VARIANT_URL}",
    )
    capacity_reservation: CapacityReservation | None = Field(
        None, description=f"CapacityReservationConfig. Default: unset (on-demand capacity). {CAPACITY_URL}"
    )
    autoscaling: Autoscaling | None = None
    core_dumps: CoreDumps | None = Field(
        None,
        description="CoreDumpConfig: where SageMaker writes a crashed container's core dump (the data bucket, "
        f"the deployment's KMS key). Default: unset (no core dumps). {CORE_DUMP_URL}",
    )
    ssm_access: bool = Field(
        False,
        description="EnableSSMAccess: a shell into the variant's containers through AWS Systems Manager. "
        f"Default: false (AWS's default). {VARIANT_URL}",
    )

    @model_validator(mode="before")
    @classmethod
    def _pools_replace_instance_type(cls, data: object) -> object:
        """With instance_pools, instance_type is the priority-1 pool's type (AWS: the pools replace it)."""
        if not isinstance(data, dict) or not data.get("instance_pools"):
            return data
        if data.get("instance_type") is not None:
            raise ValueError(
                f"instance_type={data['instance_type']!r} and instance_pools are both set; instance pools "
                f"replace the variant's InstanceType: remove instance_type ({POOLS_URL})"
            )
        pools = data["instance_pools"]
        ranked = [p for p in pools if isinstance(p, dict) and isinstance(p.get("priority"), int)]
        if ranked:
            data = {**data, "instance_type": min(ranked, key=lambda p: p["priority"]).get("instance_type")}
        return data

    @property
    def pool_types(self) -> tuple[str, ...]:
        """Every instance type the variant may run on: its pools' by priority, or its one type."""
        if not self.instance_pools:
            return (self.instance_type,)
        return tuple(p.instance_type for p in sorted(self.instance_pools, key=lambda p: p.priority))


class ServerlessAutoscaling(Frozen):
    """Target tracking on ``sagemaker:variant:DesiredProvisionedConcurrency``."""

    min_capacity: int = Field(ge=SERVERLESS_CONCURRENCY_RANGE[0], le=SERVERLESS_CONCURRENCY_RANGE[1])
    max_capacity: int = Field(ge=SERVERLESS_CONCURRENCY_RANGE[0], le=SERVERLESS_CONCURRENCY_RANGE[1])
    target_utilization: float = Field(
        0.7, gt=0, le=1, description="SageMakerVariantProvisionedConcurrencyUtilization target."
    )


class ServerlessSpec(Frozen):
    """ServerlessConfig of the single serverless variant (docs/serverless-async.md)."""

    variant_name: str = Field("main", pattern=AWS_NAME)
    memory_size_mb: ServerlessMemory
    max_concurrency: int = Field(ge=SERVERLESS_CONCURRENCY_RANGE[0], le=SERVERLESS_CONCURRENCY_RANGE[1])
    provisioned_concurrency: int | None = Field(
        None, ge=SERVERLESS_CONCURRENCY_RANGE[0], le=SERVERLESS_CONCURRENCY_RANGE[1]
    )
    autoscaling: ServerlessAutoscaling | None = None


class AsyncSpec(Frozen):
    """AsyncInferenceConfig: results and failures go to prefixes of the endpoint's own bucket."""

    output_prefix: str = Field("async/output", pattern=S3_KEY_PREFIX)
    failure_prefix: str = Field("async/failure", pattern=S3_KEY_PREFIX)
    notifications: bool = Field(False, description="Create SNS success and error topics.")
    include_response_in_notifications: bool = Field(
        False,
        description="Copy the inference response into the success/error notifications "
        "(AsyncInferenceNotificationConfig.IncludeInferenceResponseIn). Default: false, so subscribers get "
        "the S3 location only and payloads stay in the encrypted bucket. "
        "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_AsyncInferenceNotificationConfig.html",
    )
    max_concurrent_invocations_per_instance: int | None = Field(
        None, ge=ASYNC_CONCURRENCY_RANGE[0], le=ASYNC_CONCURRENCY_RANGE[1]
    )


class Deployment(Frozen):
    """Deployment guardrails: blue/green traffic shifting, or a rolling update batch by batch (no second
    fleet), with auto-rollback on the endpoint's alarms.

    https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails.html
    """

    strategy: Literal["all-at-once", "canary", "linear", "rolling"] = Field(
        "all-at-once",
        description="Blue/green all-at-once, canary or linear (BlueGreenUpdatePolicy: a full new fleet beside "
        "the old one), or rolling (RollingUpdatePolicy: the fleet is replaced batch by batch, so a GPU fleet "
        f"needs one batch of extra capacity, not a second fleet; one instance variant only). {ROLLING_URL}",
    )
    canary_size_percent: int | None = Field(
        None, ge=1, le=100, description="Canary: share of the new fleet's capacity turned on first (1-50)."
    )
    linear_step_percent: int | None = Field(
        None, ge=1, le=100, description="Linear: share of the new fleet's capacity per step (10-50)."
    )
    batch_instances: int | None = Field(
        None,
        ge=MIN_CAPACITY_SIZE,
        description="Rolling: MaximumBatchSize {Type: INSTANCE_COUNT}, instances replaced per step (5-50% of the "
        f"variant's instances); set this or batch_percent. {ROLLING_URL}",
    )
    batch_percent: int | None = Field(
        None,
        ge=1,
        le=100,
        description="Rolling: MaximumBatchSize {Type: CAPACITY_PERCENT} (5-50); set this or batch_instances. "
        f"{ROLLING_URL}",
    )
    rollback_batch_instances: int | None = Field(
        None,
        ge=MIN_CAPACITY_SIZE,
        description="Rolling: RollbackMaximumBatchSize {Type: INSTANCE_COUNT}. Default: unset (the whole old "
        f"fleet comes back at once). {ROLLING_URL}",
    )
    rollback_batch_percent: int | None = Field(
        None,
        ge=1,
        le=100,
        description=f"Rolling: RollbackMaximumBatchSize {{Type: CAPACITY_PERCENT}}. Default: unset. {ROLLING_URL}",
    )
    wait_interval_seconds: int = Field(300, ge=WAIT_INTERVAL_RANGE_S[0], le=WAIT_INTERVAL_RANGE_S[1])
    termination_wait_seconds: int = Field(0, ge=WAIT_INTERVAL_RANGE_S[0], le=WAIT_INTERVAL_RANGE_S[1])
    max_execution_timeout_seconds: int | None = Field(
        None,
        ge=EXECUTION_TIMEOUT_RANGE_S[0],
        le=EXECUTION_TIMEOUT_RANGE_S[1],
        description="MaximumExecutionTimeoutInSeconds: 600-28800 (blue/green and rolling). Default: unset.",
    )
    auto_rollback: bool = True


class DataCapture(Frozen):
    """DataCaptureConfig: request/response capture to the endpoint's bucket (not for serverless)."""

    enabled: bool = True
    sampling_percentage: int = Field(100, ge=SAMPLING_PERCENT_RANGE[0], le=SAMPLING_PERCENT_RANGE[1])
    capture: tuple[Literal["input", "output"], ...] = Field(("input", "output"), min_length=1)
    prefix: str = Field("data-capture", pattern=S3_KEY_PREFIX)
    csv_content_types: tuple[
        Annotated[str, Field(pattern=MEDIA_TYPE, max_length=CONTENT_TYPE_MAX_LENGTH)], ...
    ] = Field(
        ("text/csv",),
        max_length=MAX_CAPTURE_CONTENT_TYPES,
        description="CaptureContentTypeHeader.CsvContentTypes: payloads of these types are stored as text "
        "(up to 10). Default: [text/csv]. Payloads of other types are stored base64-encoded. " + CAPTURE_URL,
    )
    json_content_types: tuple[
        Annotated[str, Field(pattern=MEDIA_TYPE, max_length=CONTENT_TYPE_MAX_LENGTH)], ...
    ] = Field(
        ("application/json",),
        max_length=MAX_CAPTURE_CONTENT_TYPES,
        description="CaptureContentTypeHeader.JsonContentTypes (up to 10). Default: [application/json]. "
        "With both lists empty every payload is stored base64-encoded. " + CAPTURE_URL,
    )


class EndpointSpec(Frozen):
    """The endpoint type and everything that belongs to its EndpointConfig and Endpoint."""

    type: Literal["realtime", "serverless", "multi-model", "multi-container", "async", "inference-components"]
    variants: list[Variant] = Field(default_factory=list, max_length=MAX_PRODUCTION_VARIANTS)
    serverless: ServerlessSpec | None = None
    async_: AsyncSpec | None = Field(None, alias="async")
    deployment: Deployment = Field(default_factory=lambda: Deployment())
    data_capture: DataCapture | None = None
    metrics: EndpointMetrics = Field(
        default_factory=lambda: EndpointMetrics(),
        description=f"MetricsConfig of the endpoint config (always written, each value explicit). {METRICS_URL}",
    )
    inference_components: InferenceComponentsSpec | None = Field(
        None,
        description="inference-components only: instance scaling and the components (smkit.config.components).",
    )
    shadow_variants: list[ShadowVariant] = Field(
        default_factory=list,
        max_length=MAX_SHADOW_VARIANTS,
        description="realtime only: ShadowProductionVariants (at most one, beside exactly one production variant).",
    )
