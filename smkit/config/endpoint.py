"""The ``endpoint`` section: the endpoint type, its variants (instance, serverless, async), deployment
guardrails and data capture; inference components and shadow variants are in :mod:`smkit.config.components`.

AWS references:
- EndpointConfig: https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-sagemaker-endpointconfig.html
- Endpoint: https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-sagemaker-endpoint.html
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from smkit.config.base import AWS_NAME, Frozen
from smkit.config.components import InferenceComponentsSpec, ShadowVariant
from smkit.config.scaling import Autoscaling

# Family, optional hyphenated qualifier (ml.p6-b200.48xlarge), size.
INSTANCE_TYPE = r"^ml\.[a-z0-9]+(-[a-z0-9]+)*\.[a-z0-9]+$"


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
