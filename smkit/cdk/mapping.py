"""Pure functions from the deployment config to the constructs' typed arguments.

The only module under ``smkit/cdk/`` that knows the config's shape besides the stacks themselves. What a
container runs (image, model data, environment) comes decided from the resolved deployment
(:mod:`smkit.config.resolved`); this module only translates it into construct arguments.
"""

from __future__ import annotations

from aws_cdk import Duration, Size
from aws_cdk import aws_ecr as ecr

from smkit.cdk.constructs.autoscaling import ScalingSettings, ScalingTarget
from smkit.cdk.constructs.endpoint import BatchSize, CapacityUnit, DeploymentGuardrails, DeploymentStrategy
from smkit.cdk.constructs.endpoint_config import (
    AsyncSettings,
    CaptureMode,
    DataCaptureSettings,
    InstanceType,
    InstanceVariant,
    RoutingStrategy,
    ServerlessVariant,
)
from smkit.cdk.constructs.image import ServingImage
from smkit.cdk.constructs.model import VpcSettings
from smkit.cdk.constructs.model_data import ModelData
from smkit.cdk.constructs.monitoring import AlarmThresholds, Subscriber
from smkit.cdk.constructs.storage import EndpointBucket
from smkit.config import DeploymentConfig, ShadowVariant
from smkit.config.resolved import ResolvedImage, ResolvedModelData, ResolvedVariant
from smkit.config.scaling import variant_paths


def seconds(value: int | None) -> Duration | None:
    """A config's whole seconds as the constructs' ``Duration`` (None stays None)."""
    return None if value is None else Duration.seconds(value)


def gibibytes(value: int | None) -> Size | None:
    """A config's whole GiB as the constructs' ``Size`` (None stays None)."""
    return None if value is None else Size.gibibytes(value)


def pascal(text: str) -> str:
    """``tabular-realtime`` -> ``TabularRealtime`` (construct ids are PascalCase)."""
    return "".join(part[:1].upper() + part[1:] for part in text.replace("_", "-").split("-") if part)


def _asset(image: ResolvedImage, repository: ecr.IRepository | None) -> ServingImage:
    if image.context is None:  # the kit's image, staged from the installed smkit package
        return ServingImage.from_kit(requirements=image.requirements_file, build_args=image.build_args)
    return ServingImage.from_asset(
        image.context, dockerfile=image.dockerfile, exclude=image.exclude, build_args=image.build_args
    )


def _in_repository(image: ResolvedImage, repository: ecr.IRepository | None) -> ServingImage:
    assert repository is not None and image.tag is not None, "smkit.cdk.serving_stage adds the repository"
    return ServingImage.from_ecr(repository, image.tag)


def _by_uri(image: ResolvedImage, repository: ecr.IRepository | None) -> ServingImage:
    assert image.uri is not None
    return ServingImage.from_dlc(image.uri)


# ``build`` -> Docker asset of the context, ``ecr`` -> this deployment's repository + tag, ``dlc`` -> the URI.
IMAGE_SOURCES = {"build": _asset, "ecr": _in_repository, "dlc": _by_uri}


def image_source(image: ResolvedImage, *, repository: ecr.IRepository | None) -> ServingImage:
    """The construct-level image source of a resolved image."""
    return IMAGE_SOURCES[image.source](image, repository)


MODEL_DATA = {
    "archive": lambda path, data: ModelData.from_archive(path),
    "prefix": lambda path, data: ModelData.from_prefix(path),
    "multi-model": lambda path, data: ModelData.from_multi_model(path, cache_enabled=data.cache_enabled),
}


def model_data(data: ResolvedModelData) -> ModelData:
    """The model data source of one container."""
    if data.uri is not None:
        return ModelData.from_s3(
            data.uri,
            kind=data.kind,
            kms_key_arn=data.kms_key_arn,
            cache_enabled=data.cache_enabled,
            accept_eula=data.accept_eula,
        )
    assert data.path is not None
    return MODEL_DATA[data.kind](data.path, data)


def instance_variants(cfg: DeploymentConfig) -> list[InstanceVariant]:
    """Instance-backed production variants (empty for serverless)."""
    return [
        InstanceVariant(
            name=v.name,
            instance_type=InstanceType.of(v.instance_type),
            initial_instance_count=v.initial_instance_count,
            initial_weight=v.initial_weight,
            volume_size=gibibytes(v.volume_size_gb),
            model_data_download_timeout=seconds(v.model_data_download_timeout_seconds),
            container_startup_health_check_timeout=seconds(v.container_startup_health_check_timeout_seconds),
            routing=RoutingStrategy.of(v.routing) if v.routing else None,
            inference_ami_version=v.inference_ami_version,
            capacity_reservation_arn=v.capacity_reservation.ml_reservation_arn
            if v.capacity_reservation
            else None,
            instance_pools=tuple(
                (InstanceType.of(p.instance_type), p.priority) for p in v.instance_pools or ()
            ),
            instance_provision_timeout=seconds(v.instance_provision_timeout_seconds),
        )
        for v in cfg.endpoint.variants
    ]


def shadow_variant(shadow: ShadowVariant, resolved: ResolvedVariant, *, model_name: str) -> InstanceVariant:
    """A ShadowProductionVariant: its weight relative to the production variant's is the sampled share
    (:class:`smkit.config.resolved.ResolvedVariant`). https://docs.aws.amazon.com/sagemaker/latest/dg/shadow-tests.html
    """
    return InstanceVariant(
        name=resolved.name,
        instance_type=InstanceType.of(shadow.instance_type),
        initial_instance_count=resolved.initial_instance_count,
        initial_weight=resolved.initial_weight,
        model_name=model_name,
        routing=RoutingStrategy.of(shadow.routing) if shadow.routing else None,
        volume_size=gibibytes(shadow.volume_size_gb),
    )


def serverless_variant(cfg: DeploymentConfig) -> ServerlessVariant | None:
    """The serverless variant, if the endpoint is serverless."""
    s = cfg.endpoint.serverless
    if cfg.endpoint.type != "serverless" or s is None:
        return None
    return ServerlessVariant(
        name=s.variant_name,
        memory_size=Size.mebibytes(s.memory_size_mb),
        max_concurrency=s.max_concurrency,
        provisioned_concurrency=s.provisioned_concurrency,
    )


def scaling(cfg: DeploymentConfig) -> list[tuple[str, InstanceType | None, ScalingSettings]]:
    """``(variant name, instance type, settings)`` for every variant that autoscales, shadow variants too."""
    out: list[tuple[str, InstanceType | None, ScalingSettings]] = []
    s = cfg.endpoint.serverless
    if cfg.endpoint.type == "serverless" and s is not None and s.autoscaling is not None:
        a = s.autoscaling
        settings = ScalingSettings(
            ScalingTarget.PROVISIONED_CONCURRENCY, a.min_capacity, a.max_capacity, a.target_utilization
        )
        out.append((s.variant_name, None, settings))
    for _, v in variant_paths(cfg):
        if v.autoscaling is None:
            continue
        va = v.autoscaling
        if va.target_backlog_per_instance is not None:
            kind, target = ScalingTarget.BACKLOG_PER_INSTANCE, float(va.target_backlog_per_instance)
        else:
            kind, target = (
                ScalingTarget.INVOCATIONS_PER_INSTANCE,
                float(va.target_invocations_per_instance or 0),
            )
        settings = ScalingSettings(
            kind,
            va.min_capacity,
            va.max_capacity,
            target,
            scale_in_cooldown=Duration.seconds(va.scale_in_cooldown_seconds),
            scale_out_cooldown=Duration.seconds(va.scale_out_cooldown_seconds),
        )
        out.append((v.name, InstanceType.of(v.instance_type), settings))
    return out


def batch_size(count: int | None, percent: int | None) -> BatchSize | None:
    """A rolling update's CapacitySize: instances, or a percentage of the variant's instances."""
    if count is not None:
        return BatchSize(CapacityUnit.INSTANCE_COUNT, count)
    return BatchSize(CapacityUnit.CAPACITY_PERCENT, percent) if percent is not None else None


def guardrails(cfg: DeploymentConfig) -> DeploymentGuardrails:
    """Blue/green or rolling settings of the endpoint."""
    d = cfg.endpoint.deployment
    rolling = d.strategy == "rolling"
    return DeploymentGuardrails(
        strategy=DeploymentStrategy.of(d.strategy),
        canary_size_percent=d.canary_size_percent,
        linear_step_percent=d.linear_step_percent,
        batch=batch_size(d.batch_instances, d.batch_percent) if rolling else None,
        rollback_batch=batch_size(d.rollback_batch_instances, d.rollback_batch_percent) if rolling else None,
        wait_interval=Duration.seconds(d.wait_interval_seconds),
        termination_wait=Duration.seconds(d.termination_wait_seconds),
        max_execution_timeout=seconds(d.max_execution_timeout_seconds),
        auto_rollback=d.auto_rollback,
    )


def endpoint_kind(cfg: DeploymentConfig) -> str | None:
    """``serverless`` for a serverless endpoint, None for an instance-based one: part of the endpoint's
    physical name (:class:`smkit.cdk.constructs.endpoint.InferenceEndpoint`), so switching between the two
    replaces the endpoint instead of updating it in place, which SageMaker refuses (realtime -> serverless)
    or cannot roll back (serverless -> realtime)."""
    return "serverless" if cfg.endpoint.type == "serverless" else None


def retain_variant_properties(cfg: DeploymentConfig) -> bool:
    """Keep instance counts across updates only when they are autoscaled (then every variant, shadow
    variants included, is: ``smkit.config.aws_rules.retained_counts``)."""
    return any(v.autoscaling is not None for _, v in variant_paths(cfg)) or (
        cfg.endpoint.serverless is not None and cfg.endpoint.serverless.autoscaling is not None
    )


def thresholds(cfg: DeploymentConfig) -> AlarmThresholds:
    """Alarm thresholds from ``monitoring``."""
    m = cfg.monitoring
    return AlarmThresholds(
        latency_p99=Duration.millis(m.latency_p99_ms),
        error_5xx_percent=m.error_5xx_percent,
        error_4xx_percent=m.error_4xx_percent,
        backlog_age=seconds(m.backlog_age_seconds),
        evaluation_periods=m.evaluation_periods,
    )


SUBSCRIBER_TARGET = {"email": "address", "https": "url", "sns": "topic_arn"}


def subscribers(cfg: DeploymentConfig) -> list[Subscriber]:
    """Who gets the alarm topic (``monitoring.subscriptions``)."""
    return [Subscriber(s.type, getattr(s, SUBSCRIBER_TARGET[s.type])) for s in cfg.monitoring.subscriptions]


def data_capture(cfg: DeploymentConfig, storage: EndpointBucket) -> DataCaptureSettings | None:
    """DataCaptureConfig into the endpoint bucket, if enabled."""
    capture = cfg.endpoint.data_capture
    if capture is None or not capture.enabled:
        return None
    return DataCaptureSettings(
        destination_s3_uri=storage.s3_uri(capture.prefix),
        sampling_percentage=capture.sampling_percentage,
        capture=[CaptureMode.of(m) for m in capture.capture],
        csv_content_types=capture.csv_content_types,
        json_content_types=capture.json_content_types,
    )


def async_settings(
    cfg: DeploymentConfig, storage: EndpointBucket, *, success_topic: str | None, error_topic: str | None
) -> AsyncSettings | None:
    """AsyncInferenceConfig into the endpoint bucket, if the endpoint is async."""
    a = cfg.endpoint.async_
    if cfg.endpoint.type != "async" or a is None:
        return None
    return AsyncSettings(
        output_s3_uri=storage.s3_uri(a.output_prefix),
        failure_s3_uri=storage.s3_uri(a.failure_prefix),
        success_topic_arn=success_topic,
        error_topic_arn=error_topic,
        include_response_in_notifications=a.include_response_in_notifications,
        max_concurrent_invocations_per_instance=a.max_concurrent_invocations_per_instance,
    )


def vpc(cfg: DeploymentConfig) -> VpcSettings | None:
    """Model VpcConfig, if configured."""
    v = cfg.security.vpc
    return VpcSettings(subnet_ids=v.subnet_ids, security_group_ids=v.security_group_ids) if v else None
