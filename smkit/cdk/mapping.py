"""Pure functions from the resolved deployment to the constructs' typed arguments.

Everything is decided in the resolved deployment (:mod:`smkit.config.resolved`): what a container runs
(image, model data, environment), the variants, the scaling policies, the endpoint-level sections. This
module only renames its fields into the constructs' arguments (the CloudFormation property shapes).
"""

from __future__ import annotations

from typing import TypedDict

from aws_cdk import Duration, Size
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecr as ecr
from constructs import Construct

from smkit.cdk.constructs.autoscaling import ScalingSettings, ScalingTarget
from smkit.cdk.constructs.endpoint import BatchSize, CapacityUnit, DeploymentGuardrails, DeploymentStrategy
from smkit.cdk.constructs.endpoint_config import (
    AsyncSettings,
    CaptureMode,
    DataCaptureSettings,
    InstanceType,
    InstanceVariant,
    MetricsSettings,
    RoutingStrategy,
    ServerlessVariant,
)
from smkit.cdk.constructs.image import ServingImage
from smkit.cdk.constructs.model import IModel
from smkit.cdk.constructs.model_data import ModelData
from smkit.cdk.constructs.monitoring import AlarmThresholds, Subscriber
from smkit.cdk.constructs.storage import EndpointBucket
from smkit.config.resolved import (
    ResolvedChannel,
    ResolvedDeployment,
    ResolvedImage,
    ResolvedModelData,
    ResolvedScaling,
    ResolvedVariant,
)


def seconds(value: int | None) -> Duration | None:
    """A config's whole seconds as the constructs' ``Duration`` (None stays None)."""
    return None if value is None else Duration.seconds(value)


def gibibytes(value: int | None) -> Size | None:
    """A config's whole GiB as the constructs' ``Size`` (None stays None)."""
    return None if value is None else Size.gibibytes(value)


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
    if data.kind == "model-package":
        assert data.package is not None and data.uri is not None  # smkit.config.model_data_rules
        return ModelData.from_model_package(data.package, data_uri=data.uri, kms_key_arn=data.kms_key_arn)
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


def channel_data(channel: ResolvedChannel) -> ModelData:
    """The data source of one of a container's channels: the archive ``smkit package`` writes from a local
    folder, else as a container's model data."""
    if channel.archive is not None:
        return ModelData.from_archive(channel.archive)
    return model_data(channel.data)


def _instance_type(v: ResolvedVariant) -> str:
    assert v.instance_type is not None, (
        f"variant {v.name} of an instance-backed endpoint has an instance type"
    )
    return v.instance_type


def instance_variants(
    deployment: ResolvedDeployment, storage: EndpointBucket | None = None
) -> list[InstanceVariant]:
    """Instance-backed production variants (empty for serverless); core dumps go to ``storage``."""
    if deployment.serverless is not None:
        return []
    return [
        InstanceVariant(
            name=v.name,
            instance_type=InstanceType.of(_instance_type(v)),
            initial_instance_count=v.initial_instance_count,
            initial_weight=v.initial_weight,
            volume_size=gibibytes(v.volume_size_gb),
            model_data_download_timeout=seconds(v.model_data_download_timeout_s),
            container_startup_health_check_timeout=seconds(v.startup_health_check_timeout_s),
            routing=RoutingStrategy.of(v.routing) if v.routing else None,
            inference_ami_version=v.inference_ami_version,
            capacity_reservation_arn=v.capacity_reservation_arn,
            instance_pools=tuple((InstanceType.of(p.instance_type), p.priority) for p in v.instance_pools),
            instance_provision_timeout=seconds(v.instance_provision_timeout_s),
            core_dump_s3_uri=core_dump_uri(v, storage),
            ssm_access=v.ssm_access,
        )
        for v in deployment.variants
    ]


def core_dump_uri(variant: ResolvedVariant, storage: EndpointBucket | None) -> str | None:
    """CoreDumpConfig.DestinationS3Uri of ``variant`` in the endpoint bucket (None: no core dumps)."""
    if variant.core_dump_prefix is None:
        return None
    if storage is None:
        raise ValueError(f"variant {variant.name!r}: core dumps need the endpoint's bucket")
    return storage.s3_uri(variant.core_dump_prefix)


def metrics_settings(deployment: ResolvedDeployment) -> MetricsSettings:
    """The endpoint config's MetricsConfig (docs/observability.md)."""
    m = deployment.metrics
    return MetricsSettings(
        detailed_observability=m.detailed_observability,
        enhanced_metrics=m.enhanced_metrics,
        publish_frequency_seconds=m.publish_frequency_seconds,
    )


def shadow_variant(shadow: ResolvedVariant, *, model: IModel) -> InstanceVariant:
    """A ShadowProductionVariant: its weight relative to the production variant's is the sampled share
    (:class:`smkit.config.resolved.ResolvedVariant`). https://docs.aws.amazon.com/sagemaker/latest/dg/shadow-tests.html
    """
    return InstanceVariant(
        name=shadow.name,
        instance_type=InstanceType.of(_instance_type(shadow)),
        initial_instance_count=shadow.initial_instance_count,
        initial_weight=shadow.initial_weight,
        model=model,
        routing=RoutingStrategy.of(shadow.routing) if shadow.routing else None,
        volume_size=gibibytes(shadow.volume_size_gb),
    )


def serverless_variant(deployment: ResolvedDeployment) -> ServerlessVariant | None:
    """The serverless variant, if the endpoint is serverless."""
    s = deployment.serverless
    if s is None:
        return None
    return ServerlessVariant(
        name=s.variant_name,
        memory_size=Size.mebibytes(s.memory_size_mb),
        max_concurrency=s.max_concurrency,
        provisioned_concurrency=s.provisioned_concurrency,
    )


def scaling_settings(policy: ResolvedScaling) -> ScalingSettings:
    """One variant's scaling policy (the construct's cooldown defaults where the policy sets none)."""
    return ScalingSettings(
        ScalingTarget(policy.kind),
        policy.min_capacity,
        policy.max_capacity,
        policy.target,
        scale_in_cooldown=seconds(policy.scale_in_cooldown_s),
        scale_out_cooldown=seconds(policy.scale_out_cooldown_s),
    )


def batch_size(count: int | None, percent: int | None) -> BatchSize | None:
    """A rolling update's CapacitySize: instances, or a percentage of the variant's instances."""
    if count is not None:
        return BatchSize(CapacityUnit.INSTANCE_COUNT, count)
    return BatchSize(CapacityUnit.CAPACITY_PERCENT, percent) if percent is not None else None


def guardrails(deployment: ResolvedDeployment) -> DeploymentGuardrails:
    """Blue/green or rolling settings of the endpoint."""
    d = deployment.guardrails
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


def thresholds(deployment: ResolvedDeployment) -> AlarmThresholds:
    """Alarm thresholds from ``monitoring``."""
    m = deployment.monitoring
    return AlarmThresholds(
        latency_p99=Duration.millis(m.latency_p99_ms),
        error_5xx_percent=m.error_5xx_percent,
        error_4xx_percent=m.error_4xx_percent,
        backlog_age=seconds(m.backlog_age_seconds),
        evaluation_periods=m.evaluation_periods,
    )


SUBSCRIBER_TARGET = {"email": "address", "https": "url", "sns": "topic_arn"}


def subscribers(deployment: ResolvedDeployment) -> list[Subscriber]:
    """Who gets the alarm topic (``monitoring.subscriptions``)."""
    return [
        Subscriber(s.type, getattr(s, SUBSCRIBER_TARGET[s.type])) for s in deployment.monitoring.subscriptions
    ]


def data_capture(deployment: ResolvedDeployment, storage: EndpointBucket) -> DataCaptureSettings | None:
    """DataCaptureConfig into the endpoint bucket, if enabled."""
    capture = deployment.data_capture
    if capture is None:
        return None
    return DataCaptureSettings(
        destination_s3_uri=storage.s3_uri(capture.prefix),
        sampling_percentage=capture.sampling_percentage,
        capture=[CaptureMode.of(m) for m in capture.capture],
        csv_content_types=capture.csv_content_types,
        json_content_types=capture.json_content_types,
    )


def async_settings(
    deployment: ResolvedDeployment,
    storage: EndpointBucket,
    *,
    success_topic: str | None,
    error_topic: str | None,
) -> AsyncSettings | None:
    """AsyncInferenceConfig into the endpoint bucket, if the endpoint is async."""
    a = deployment.asynchronous
    if a is None:
        return None
    return AsyncSettings(
        output_s3_uri=storage.s3_uri(a.output_prefix),
        failure_s3_uri=storage.s3_uri(a.failure_prefix),
        success_topic_arn=success_topic,
        error_topic_arn=error_topic,
        include_response_in_notifications=a.include_response_in_notifications,
        max_concurrent_invocations_per_instance=a.max_concurrent_invocations_per_instance,
    )


class Network(TypedDict, total=False):
    """The VPC arguments of ``InferenceModel`` and ``EndpointConfiguration`` (none: no VPC)."""

    vpc_subnets: ec2.SubnetSelection
    security_groups: list[ec2.ISecurityGroup]


def network(scope: Construct, deployment: ResolvedDeployment) -> Network:
    """``security.vpc``'s subnet and security group IDs as the constructs' ``vpc_subnets`` and
    ``security_groups`` (imported by ID into ``scope``; the config names no VPC)."""
    v = deployment.vpc
    if v is None:
        return Network()
    return Network(
        vpc_subnets=ec2.SubnetSelection(
            subnets=[ec2.Subnet.from_subnet_id(scope, f"VpcSubnet{i}", s) for i, s in enumerate(v.subnet_ids)]
        ),
        security_groups=[
            ec2.SecurityGroup.from_security_group_id(scope, f"VpcSecurityGroup{i}", g, mutable=False)
            for i, g in enumerate(v.security_group_ids)
        ],
    )
