"""Config of inference components and shadow variants (the ``endpoint`` section, :mod:`smkit.config.endpoint`).

- ``endpoint.inference_components`` (``endpoint.type: inference-components``): one model-less instance
  variant with managed instance scaling, and one ``AWS::SageMaker::InferenceComponent`` per entry of
  ``components``, each running one container of ``model.containers`` with its own CPU / memory /
  accelerator reservation, copy count and copy autoscaling (scale to zero included).
- ``endpoint.shadow_variants`` (realtime): ``ShadowProductionVariants`` that receive a sampled copy of the
  production traffic; their answers go to data capture, never to the caller.

AWS references:
- CreateInferenceComponent: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateInferenceComponent.html
- AWS::SageMaker::InferenceComponent: https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-sagemaker-inferencecomponent.html
- ManagedInstanceScaling: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantManagedInstanceScaling.html
- Scale to zero: https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-zero-instances.html
- Shadow variants: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateEndpointConfig.html#sagemaker-CreateEndpointConfig-request-ShadowProductionVariants
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from smkit.aws.instances import INSTANCE_TYPE
from smkit.aws.limits import (
    AZ_IMBALANCE_RANGE,
    EXECUTION_TIMEOUT_RANGE_S,
    MAX_SPECIFICATIONS,
    MAX_TARGET_VALUE,
    METRICS_PATH_MAX_LENGTH,
    MIN_CAPACITY_SIZE,
    MIN_COPY_ACCELERATORS,
    MIN_COPY_CPU_CORES,
    MIN_COPY_MEMORY_MB,
    MIN_INSTANCE_COUNT,
    MIN_MANAGED_INSTANCES,
    MODEL_DOWNLOAD_TIMEOUT_RANGE_S,
    STARTUP_HEALTH_CHECK_RANGE_S,
    VOLUME_SIZE_RANGE_GB,
    WAIT_INTERVAL_RANGE_S,
)
from smkit.aws.patterns import COMPONENT_NAME, METRICS_PATH
from smkit.config.base import Frozen
from smkit.config.scaling import Autoscaling

CREATE_IC = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateInferenceComponent.html"
RESOURCES = (
    "https://docs.aws.amazon.com/sagemaker/latest/APIReference/"
    "API_InferenceComponentComputeResourceRequirements.html"
)
ROLLING = (
    "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentRollingUpdatePolicy.html"
)
SCALE_TO_ZERO = "https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-zero-instances.html"
SPECIFICATIONS = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateInferenceComponent.html"
SCALE_IN_POLICY = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantManagedInstanceScalingScaleInPolicy.html"
MANAGED_SCALING = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantManagedInstanceScaling.html"
ADAPTERS = "https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-adapt.html"
SCHEDULING = (
    "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentSchedulingConfig.html"
)
DATA_CACHE = (
    "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentDataCacheConfig.html"
)
SHADOW = (
    "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateEndpointConfig.html"
    "#sagemaker-CreateEndpointConfig-request-ShadowProductionVariants"
)


class ComputeRequirements(Frozen):
    """ComputeResourceRequirements: what one copy of the component reserves on an instance."""

    min_memory_mb: int = Field(
        ge=MIN_COPY_MEMORY_MB,
        description=f"MinMemoryRequiredInMb: memory reserved per copy (required, >= 128). {RESOURCES}",
    )
    max_memory_mb: int | None = Field(
        None,
        ge=MIN_COPY_MEMORY_MB,
        description=f"MaxMemoryRequiredInMb: memory a copy may use (>= min_memory_mb). Default: unset. {RESOURCES}",
    )
    cpu_cores: float | None = Field(
        None,
        ge=MIN_COPY_CPU_CORES,
        description=f"NumberOfCpuCoresRequired: CPU cores reserved per copy (>= 0.25). Default: unset. {RESOURCES}",
    )
    accelerators: float | None = Field(
        None,
        ge=MIN_COPY_ACCELERATORS,
        description=(
            f"NumberOfAcceleratorDevicesRequired: GPUs / Inferentia devices per copy (>= 1). "
            f"Default: unset (CPU instances). {RESOURCES}"
        ),
    )


class ComputeForInstanceType(Frozen):
    """One entry of InferenceComponent.Specifications: the copy's reservation on one instance pool's type."""

    instance_type: str = Field(
        pattern=INSTANCE_TYPE,
        description=f"InstanceType: one of the variant's instance_pools types. {SPECIFICATIONS}",
    )
    compute: ComputeRequirements = Field(description=f"ComputeResourceRequirements on this type. {RESOURCES}")


class CopyScaling(Frozen):
    """Application Auto Scaling of ``sagemaker:inference-component:DesiredCopyCount``.

    Target tracking on ``SageMakerInferenceComponentInvocationsPerCopy``; with ``min_copies: 0`` also the
    scale-from-zero step policy driven by a ``NoCapacityInvocationFailures`` alarm, as in the AWS guide.
    """

    min_copies: int = Field(
        ge=0, description=f"Scalable target MinCapacity; 0 lets the component scale to zero. {SCALE_TO_ZERO}"
    )
    max_copies: int = Field(
        ge=MIN_CAPACITY_SIZE,
        description=f"Scalable target MaxCapacity (>= min_copies, >= 1). Required. {SCALE_TO_ZERO}",
    )
    target_invocations_per_copy: float = Field(
        gt=0,
        le=MAX_TARGET_VALUE,
        description=(
            "Target of SageMakerInferenceComponentInvocationsPerCopy (invocations per copy per minute). "
            f"{SCALE_TO_ZERO}"
        ),
    )
    scale_in_cooldown_seconds: int = Field(
        300,
        ge=0,
        description=f"ScaleInCooldown of the target tracking policy. Default: 300. {SCALE_TO_ZERO}",
    )
    scale_out_cooldown_seconds: int = Field(
        300,
        ge=0,
        description=f"ScaleOutCooldown of the target tracking policy. Default: 300. {SCALE_TO_ZERO}",
    )
    scale_from_zero_cooldown_seconds: int = Field(
        60,
        ge=0,
        description=f"Cooldown of the scale-from-zero step policy. Default: 60. {SCALE_TO_ZERO}",
    )


class Scheduling(Frozen):
    """SchedulingConfig: how copies are placed on the variant's instances."""

    placement: Literal["spread", "binpack"] = Field(
        description="PlacementStrategy: SPREAD (copies spread over instances, for resilience) or BINPACK "
        f"(packed onto few instances, so idle ones can be released). Required. {SCHEDULING}"
    )
    max_az_imbalance: int | None = Field(
        None,
        ge=AZ_IMBALANCE_RANGE[0],
        le=AZ_IMBALANCE_RANGE[1],
        description="AvailabilityZoneBalance.MaxImbalance: largest difference in copies between two "
        "Availability Zones (EnforcementMode PERMISSIVE, the only mode). Required with placement: CloudFormation "
        "requires AvailabilityZoneBalance with PlacementStrategy, and AWS's own default is 0 (zones kept equal); "
        f"100 lets the placement pack freely. {SCHEDULING}",
    )


class InferenceComponentSpec(Frozen):
    """One AWS::SageMaker::InferenceComponent: a container of ``model.containers`` with its resources, or an
    adapter (LoRA weights in S3) on another component's model and compute."""

    # Python's regular expressions: AWS's MetricsEndpointPath pattern has a look-ahead (no "..").
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, regex_engine="python-re")

    name: str = Field(
        pattern=COMPONENT_NAME,
        description=(
            "The component's name in the config and, locally, the InferenceComponentName clients pass. "
            f"{CREATE_IC}"
        ),
    )
    container: str | None = Field(
        None,
        description="Name of the model.containers entry this component runs (Specification.ModelName). "
        f"Required, except for an adapter. {CREATE_IC}",
    )
    compute: ComputeRequirements | None = Field(
        None, description=f"ComputeResourceRequirements. Required, except for an adapter. {RESOURCES}"
    )
    base_component: str | None = Field(
        None,
        pattern=COMPONENT_NAME,
        description="Makes this an adapter component: the name of the component (of this config) whose model "
        "and compute it shares (Specification.BaseInferenceComponentName). Default: unset (a base component). "
        f"{ADAPTERS}",
    )
    artifact_url: str | None = Field(
        None,
        description="Adapters only: s3://BUCKET/KEY.tar.gz, one gzip-compressed tar archive of the LoRA "
        "adapter's folder, in the endpoint's region (Specification.Container.ArtifactUrl; AWS: \"This path must "
        f'point to a single gzip compressed tar archive (.tar.gz suffix)."). {ADAPTERS}',
    )
    artifact_path: str | None = Field(
        None,
        min_length=1,
        description="Adapters only, in place of artifact_url: the LoRA adapter's local folder (what PEFT's "
        "save_pretrained() writes: adapter_config.json and its weights), relative to the config file. "
        "`smkit package --config` archives it into the project's build/NAME/adapters/COMPONENT.tar.gz (the project: "
        "the folder holding config/, else the config's folder; byte-identical for the same files), the local "
        "endpoint serves the folder, and deploy uploads "
        f"the archive, which the template's ArtifactUrl names. Default: unset. {ADAPTERS}",
    )

    per_instance_type: tuple[ComputeForInstanceType, ...] | None = Field(
        None,
        min_length=1,
        max_length=MAX_SPECIFICATIONS,
        description="On a variant with instance_pools: the copy's compute on some pool types, in place of "
        "compute there. The template then writes Specifications, one entry per pool type (compute for the types "
        "not listed), instead of Specification. Not for adapters. Default: unset (one Specification, compute on "
        f"every type). {SPECIFICATIONS}",
    )
    scheduling: Scheduling | None = Field(
        None,
        description=f"SchedulingConfig of the copies. Default: unset (SageMaker's placement). {SCHEDULING}",
    )
    data_cache: bool | None = Field(
        None,
        description="DataCacheConfig.EnableCaching: cache the model data and image on each instance, so a new "
        f"copy starts from local disk. Default: unset (SageMaker's default). {DATA_CACHE}",
    )
    copies: int = Field(
        1,
        ge=1,
        description=(
            "RuntimeConfig.CopyCount at creation (>= 1 when the component is created; autoscaling may later "
            f"take it to 0). Default: 1. {CREATE_IC}"
        ),
    )
    model_data_download_timeout_seconds: int | None = Field(
        None,
        ge=MODEL_DOWNLOAD_TIMEOUT_RANGE_S[0],
        le=MODEL_DOWNLOAD_TIMEOUT_RANGE_S[1],
        description=f"StartupParameters.ModelDataDownloadTimeoutInSeconds. {CREATE_IC}",
    )
    container_startup_health_check_timeout_seconds: int | None = Field(
        None,
        ge=STARTUP_HEALTH_CHECK_RANGE_S[0],
        le=STARTUP_HEALTH_CHECK_RANGE_S[1],
        description=f"StartupParameters.ContainerStartupHealthCheckTimeoutInSeconds. {CREATE_IC}",
    )
    autoscaling: CopyScaling | None = Field(
        None, description=f"Copy autoscaling. Default: none (fixed copies). {SCALE_TO_ZERO}"
    )
    metrics_path: str | None = Field(
        None,
        max_length=METRICS_PATH_MAX_LENGTH,
        pattern=METRICS_PATH,
        description="Where the component's container serves Prometheus metrics, when not /metrics: the template "
        "gets Specification.Container.ContainerMetricsConfig with this MetricsEndpointPath (and the endpoint's "
        "publish frequency), and smkit's runtime serves its metrics there (SMKIT_METRICS_PATH). Not for "
        "adapters. Default: unset (/metrics on port 8080, what SageMaker scrapes without the setting). "
        "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ContainerMetricsConfig.html",
    )


class InstanceScaling(Frozen):
    """ManagedInstanceScaling of the variant: SageMaker adds and removes instances as copies need them."""

    min_instances: int = Field(
        ge=MIN_MANAGED_INSTANCES,
        description=(
            "MinInstanceCount; 0 (where the region supports it) lets the endpoint release every instance "
            f"once no copy runs. {MANAGED_SCALING}"
        ),
    )
    max_instances: int = Field(
        ge=MIN_INSTANCE_COUNT, description=f"MaxInstanceCount (>= 1). {MANAGED_SCALING}"
    )
    scale_in: Literal["idle-release", "consolidation"] | None = Field(
        None,
        description="ScaleInPolicy.Strategy: idle-release (IDLE_RELEASE) releases instances that host no copy; "
        "consolidation (CONSOLIDATION) also moves copies onto fewer instances so more can be released. "
        f"Default: unset (SageMaker's default, idle release). {SCALE_IN_POLICY}",
    )


class RollingUpdate(Frozen):
    """InferenceComponentDeploymentConfig.RollingUpdatePolicy, with auto-rollback on the component's alarms."""

    batch_copies: int | None = Field(
        None,
        ge=MIN_CAPACITY_SIZE,
        description=f"MaximumBatchSize {{Type: COPY_COUNT}}; set this or batch_percent. {ROLLING}",
    )
    batch_percent: int | None = Field(
        None,
        ge=1,
        le=100,
        description=f"MaximumBatchSize {{Type: CAPACITY_PERCENT}}; set this or batch_copies. {ROLLING}",
    )
    wait_interval_seconds: int = Field(
        120,
        ge=WAIT_INTERVAL_RANGE_S[0],
        le=WAIT_INTERVAL_RANGE_S[1],
        description=f"WaitIntervalInSeconds between batches. Default: 120. {ROLLING}",
    )
    max_execution_timeout_seconds: int | None = Field(
        None,
        ge=EXECUTION_TIMEOUT_RANGE_S[0],
        le=EXECUTION_TIMEOUT_RANGE_S[1],
        description=f"MaximumExecutionTimeoutInSeconds. Default: unset. {ROLLING}",
    )
    rollback_batch_copies: int | None = Field(
        None,
        ge=MIN_CAPACITY_SIZE,
        description=f"RollbackMaximumBatchSize {{Type: COPY_COUNT}}. Default: unset. {ROLLING}",
    )
    auto_rollback: bool = Field(
        True,
        description=f"Roll back when one of the component's alarms fires (AutoRollbackConfiguration). Default: true. {ROLLING}",
    )


class InferenceComponentsSpec(Frozen):
    """``endpoint.inference_components``: the shared instances and the components placed on them."""

    instance_scaling: InstanceScaling = Field(
        description=f"ManagedInstanceScaling of the variant. {MANAGED_SCALING}"
    )
    components: list[InferenceComponentSpec] = Field(
        min_length=1, description=f"The inference components (at least one). Required. {CREATE_IC}"
    )
    rolling_update: RollingUpdate | None = Field(
        None,
        description=(
            "How a changed component is rolled out (DeploymentConfig.RollingUpdatePolicy). "
            f"Default: unset (SageMaker's default update). {ROLLING}"
        ),
    )


class ShadowVariant(Frozen):
    """A ShadowProductionVariant: its own model on its own instances, fed a sample of production traffic."""

    name: str = Field(pattern=COMPONENT_NAME, description=f"VariantName of the shadow variant. {SHADOW}")
    instance_type: str = Field(
        pattern=INSTANCE_TYPE,
        description=f"InstanceType, e.g. ml.m5.large. Required. {SHADOW}",
    )
    initial_instance_count: int = Field(
        1, ge=MIN_INSTANCE_COUNT, description=f"InitialInstanceCount. Default: 1. {SHADOW}"
    )
    routing: Literal["least-outstanding-requests", "random"] | None = Field(
        None,
        description=(
            "RoutingConfig.RoutingStrategy of the shadow's instances (LEAST_OUTSTANDING_REQUESTS or RANDOM). "
            "Default: not set, SageMaker's default (RANDOM). "
            "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantRoutingConfig.html"
        ),
    )
    volume_size_gb: int | None = Field(
        None,
        ge=VOLUME_SIZE_RANGE_GB[0],
        le=VOLUME_SIZE_RANGE_GB[1],
        description="VolumeSizeInGB of the shadow's ML storage volume (EBS instance types only: not for instance "
        "types with local NVMe storage such as ml.g5 or ml.m5d). Default: the instance type's. "
        "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariant.html",
    )
    sampling_percentage: int = Field(
        100,
        ge=1,
        le=100,
        description=(
            "Share of production requests copied to the shadow; becomes the shadow's InitialVariantWeight "
            f"relative to the production variant's. Default: 100. {SHADOW}"
        ),
    )
    container: str = Field(
        description=f"Name of the model.containers entry the shadow serves (the candidate). Required. {SHADOW}"
    )
    autoscaling: Autoscaling | None = Field(
        None,
        description=(
            "Instance-count autoscaling of the shadow's instances, as for a production variant (and under the "
            "same update rules: with any variant autoscaled, every variant, shadow included, must be). "
            "Default: none (fixed count). https://docs.aws.amazon.com/sagemaker/latest/dg/shadow-tests.html"
        ),
    )
