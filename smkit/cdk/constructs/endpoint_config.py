"""AWS::SageMaker::EndpointConfig: instance variants or one serverless variant, async, data capture, KMS; or
the model-less instance pool of an endpoint hosting inference components (managed instance scaling).

https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-sagemaker-endpointconfig.html
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, Self, runtime_checkable

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from smkit.aws.instances import INSTANCE_TYPE_RE, has_instance_storage, volume_message
from smkit.aws.limits import METRICS_PUBLISH_FREQUENCIES_S, MIN_VARIANT_WEIGHT, SERVERLESS_MEMORY_MB
from smkit.cdk.constructs.acknowledge import acknowledge
from smkit.cdk.constructs.arns import sagemaker_arn
from smkit.cdk.constructs.model import IModel
from smkit.cdk.constructs.network import place, vpc_config


class ConfigEnum(enum.Enum):
    """An enum of CloudFormation values that also knows the kit's config spelling (``least-outstanding-requests``
    for ``LEAST_OUTSTANDING_REQUESTS``)."""

    @classmethod
    def of(cls, name: str) -> Self:
        """The member named ``name`` in the config's spelling (case and ``-``/``_`` do not matter)."""
        try:
            return cls[name.upper().replace("-", "_")]
        except KeyError:
            choices = [m.name.lower().replace("_", "-") for m in cls]
            raise ValueError(f"{cls.__name__}: {name!r} is not one of {choices}") from None


class RoutingStrategy(ConfigEnum):
    """ProductionVariant.RoutingConfig.RoutingStrategy.
    https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantRoutingConfig.html"""

    LEAST_OUTSTANDING_REQUESTS = "LEAST_OUTSTANDING_REQUESTS"
    RANDOM = "RANDOM"


class ScaleInStrategy(ConfigEnum):
    """ProductionVariantManagedInstanceScalingScaleInPolicy.Strategy.
    https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantManagedInstanceScalingScaleInPolicy.html"""

    IDLE_RELEASE = "IDLE_RELEASE"
    CONSOLIDATION = "CONSOLIDATION"


class CaptureMode(ConfigEnum):
    """DataCaptureConfig.CaptureOptions[].CaptureMode: requests, responses."""

    INPUT = "Input"
    OUTPUT = "Output"


@dataclass(frozen=True)
class InstanceType:
    """A SageMaker hosting instance type, e.g. ``InstanceType.of("ml.m5.large")``."""

    name: str

    @staticmethod
    def of(name: str) -> InstanceType:
        """The instance type ``name`` (``ml.<family>.<size>``)."""
        if not INSTANCE_TYPE_RE.match(name):
            raise ValueError(f"instance type {name!r}: give a SageMaker hosting type such as 'ml.m5.large'")
        return InstanceType(name)

    def __str__(self) -> str:
        return self.name


KMS_REASON = (
    "The endpoint uses instances with local NVMe storage, which the instance's hardware module encrypts; "
    "SageMaker rejects a KmsKeyId for them. Capture and async output are still written with the KMS key."
)


def seconds_of(duration: cdk.Duration | None) -> int | None:
    """Whole seconds of ``duration`` (None stays None): what CloudFormation's ``*InSeconds`` properties take."""
    return None if duration is None else int(duration.to_seconds())


_seconds = seconds_of


@dataclass(frozen=True)
class ManagedInstanceScaling:
    """ProductionVariant.ManagedInstanceScaling of the instance pool of an endpoint hosting inference
    components: SageMaker grows and shrinks it between ``min_instances`` (0 where the region supports it) and
    ``max_instances`` as the components' copies need; ``scale_in``: ScaleInPolicy.Strategy (None: SageMaker's
    default). https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantManagedInstanceScaling.html
    """

    min_instances: int
    max_instances: int
    scale_in: ScaleInStrategy | None = None


@dataclass(frozen=True)
class InstanceVariant:
    """A production variant on ML instances (``managed_instance_scaling``: the instance pool of an endpoint
    hosting inference components, which names no model)."""

    name: str
    instance_type: InstanceType
    initial_instance_count: int = 1
    initial_weight: float = 1.0
    volume_size: cdk.Size | None = None  # whole GiB
    model_data_download_timeout: cdk.Duration | None = None
    container_startup_health_check_timeout: cdk.Duration | None = None
    model: IModel | None = None  # a shadow variant's own model; default: the config's model
    routing: RoutingStrategy | None = None
    inference_ami_version: str | None = None
    capacity_reservation_arn: str | None = None
    # InstancePools (type, priority) in place of InstanceType, and their provisioning timeout.
    # https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-heterogeneous.html
    instance_pools: tuple[tuple[InstanceType, int], ...] = ()
    instance_provision_timeout: cdk.Duration | None = None
    managed_instance_scaling: ManagedInstanceScaling | None = None
    # CoreDumpConfig.DestinationS3Uri (encrypted with the config's key) and EnableSSMAccess.
    # https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantCoreDumpConfig.html
    core_dump_s3_uri: str | None = None
    ssm_access: bool = False

    @property
    def instance_types(self) -> tuple[str, ...]:
        """Every type the variant may run on."""
        return tuple(t.name for t, _ in self.instance_pools) or (self.instance_type.name,)

    @property
    def volume_size_gb(self) -> int | None:
        return None if self.volume_size is None else int(self.volume_size.to_gibibytes())

    @property
    def pools(self) -> tuple[tuple[str, int], ...]:
        return tuple((t.name, p) for t, p in self.instance_pools)

    @property
    def provision_timeout_seconds(self) -> int | None:
        return _seconds(self.instance_provision_timeout)


@dataclass(frozen=True)
class MetricsSettings:
    """MetricsConfig of the endpoint config, each value written explicitly. The defaults are AWS's for a new
    endpoint configuration (detailed observability on since June 17, 2026; enhanced metrics off; every 60 s).
    https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_MetricsConfig.html"""

    detailed_observability: bool = True
    enhanced_metrics: bool = False
    publish_frequency_seconds: int = 60


@dataclass(frozen=True)
class ServerlessVariant:
    """The single variant of a serverless endpoint."""

    name: str
    memory_size: cdk.Size  # 1, 2, 3, 4, 5 or 6 GiB
    max_concurrency: int
    provisioned_concurrency: int | None = None

    @property
    def memory_size_mb(self) -> int:
        return int(self.memory_size.to_mebibytes())


@dataclass(frozen=True)
class DataCaptureSettings:
    """DataCaptureConfig: where captured requests/responses go, how many and which.

    ``csv_content_types`` / ``json_content_types`` (CaptureContentTypeHeader): payloads of these types are
    stored as text; any other payload, and every payload when both are empty, base64-encoded.
    https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CaptureContentTypeHeader.html
    """

    destination_s3_uri: str
    sampling_percentage: int
    capture: Sequence[CaptureMode]
    csv_content_types: Sequence[str] = ("text/csv",)
    json_content_types: Sequence[str] = ("application/json",)


@dataclass(frozen=True)
class AsyncSettings:
    """AsyncInferenceConfig: output and failure locations, optional SNS topics."""

    output_s3_uri: str
    failure_s3_uri: str
    success_topic_arn: str | None = None
    error_topic_arn: str | None = None
    include_response_in_notifications: bool = False
    max_concurrent_invocations_per_instance: int | None = None


@runtime_checkable
class IEndpointConfig(Protocol):
    """An endpoint config an endpoint can run: one this app creates (:class:`EndpointConfiguration`) or one it
    names (:meth:`EndpointConfiguration.from_endpoint_config_name`). ``variant_names``: its production
    variants, empty when not known."""

    @property
    def endpoint_config_name(self) -> str: ...

    @property
    def endpoint_config_arn(self) -> str: ...

    @property
    def variant_names(self) -> tuple[str, ...]: ...

    @property
    def shadow_variant_names(self) -> tuple[str, ...]: ...


class ImportedEndpointConfig(cdk.Resource):
    """An endpoint config this app does not create (:meth:`EndpointConfiguration.from_endpoint_config_name`)."""

    def __init__(
        self, scope: Construct, id_: str, *, endpoint_config_name: str, variant_names: Sequence[str] = ()
    ) -> None:
        super().__init__(scope, id_)
        if not endpoint_config_name:
            raise ValueError(
                f"{self.node.path}: endpoint_config_name='': give the deployed EndpointConfigName"
            )
        # The EndpointConfigName given, its ARN in this stack's account and region, and the production
        # variants given (empty: not known); no shadow variant is known.
        self.endpoint_config_name = endpoint_config_name
        self.endpoint_config_arn = sagemaker_arn(self, "endpoint-config", endpoint_config_name)
        self.variant_names = tuple(variant_names)
        self.shadow_variant_names: tuple[str, ...] = ()


class EndpointConfiguration(cdk.Resource):
    """An EndpointConfig with a generated name serving ``model``, its volumes encrypted with ``key``.

    Instance types with local NVMe storage (:func:`smkit.aws.instances.has_instance_storage`) get no volume KmsKeyId: their storage is
    hardware-encrypted and SageMaker refuses the key. Data capture and async output always use the key.

    Without ``model`` it is the config of an endpoint hosting inference components: one variant with
    ``managed_instance_scaling``, the pool of instances the components' copies are placed on, naming no model
    and no weight. SageMaker starts the components' containers with the config's ``role``, in its VPC
    (``vpc``, ``vpc_subnets``, ``security_groups``, as :class:`smkit.cdk.constructs.model.InferenceModel`
    takes them) and with its ``network_isolation``, which mirror the models' settings
    (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateEndpointConfig.html,
    https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-deploy-models.html).
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        key: kms.IKey,
        model: IModel | None = None,
        variants: Sequence[InstanceVariant] = (),
        serverless: ServerlessVariant | None = None,
        data_capture: DataCaptureSettings | None = None,
        async_inference: AsyncSettings | None = None,
        shadow_variants: Sequence[InstanceVariant] = (),
        role: iam.IRole | None = None,
        network_isolation: bool | None = None,
        vpc: ec2.IVpc | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        metrics: MetricsSettings | None = None,
    ) -> None:
        super().__init__(scope, id_)
        self.key = key
        kms_key_arn = key.key_arn
        model_name = None if model is None else model.model_name
        metrics = metrics or MetricsSettings()
        _check(model, variants, serverless, data_capture, async_inference, shadow_variants, metrics)
        if serverless is not None:
            assert model_name is not None  # _validate_component_pool refuses a serverless pool
            production = [_serverless(model_name, serverless)]
        else:
            production = [_instance(model_name, v, kms_key_arn) for v in variants]
        # The production variants' names, in order, and the shadow variants'.
        self.variant_names = (serverless.name,) if serverless else tuple(v.name for v in variants)
        self.shadow_variant_names = tuple(v.name for v in shadow_variants)
        self.placement = place(self, vpc=vpc, vpc_subnets=vpc_subnets, security_groups=security_groups)
        self.instance_storage = any(
            has_instance_storage(t) for v in (*variants, *shadow_variants) for t in v.instance_types
        )
        self.resource = sagemaker.CfnEndpointConfig(
            self,
            "Resource",
            production_variants=production,
            kms_key_id=None if self.instance_storage else kms_key_arn,
            data_capture_config=_capture(data_capture, kms_key_arn) if data_capture else None,
            async_inference_config=_async(async_inference, kms_key_arn) if async_inference else None,
            shadow_production_variants=[_instance(model_name, v, kms_key_arn) for v in shadow_variants]
            or None,
            metrics_config=sagemaker.CfnEndpointConfig.MetricsConfigProperty(
                enable_detailed_observability=metrics.detailed_observability,
                enable_enhanced_metrics=metrics.enhanced_metrics,
                metric_publish_frequency_in_seconds=metrics.publish_frequency_seconds,
            ),
            execution_role_arn=None if role is None else role.role_arn,
            enable_network_isolation=network_isolation,
            vpc_config=vpc_config(self.placement, sagemaker.CfnEndpointConfig.VpcConfigProperty),
        )
        # The generated name, and the ARN (the resource's Ref).
        self.endpoint_config_name: str = self.resource.attr_endpoint_config_name
        self.endpoint_config_arn: str = self.resource.ref
        if self.instance_storage:
            acknowledge(
                self,
                {
                    "HIPAA.Security-SageMakerEndpointConfigurationKMSKeyConfigured": KMS_REASON,
                    "NIST.800.53.R5-SageMakerEndpointConfigurationKMSKeyConfigured": KMS_REASON,
                },
            )

    @staticmethod
    def from_endpoint_config_name(
        scope: Construct, id_: str, endpoint_config_name: str, *, variant_names: Sequence[str] = ()
    ) -> IEndpointConfig:
        """An endpoint config deployed elsewhere, by its EndpointConfigName, for an endpoint of this app
        (``variant_names``: its production variants, so that the endpoint's metric helpers and ``variant(name)``
        know them)."""
        return ImportedEndpointConfig(
            scope, id_, endpoint_config_name=endpoint_config_name, variant_names=variant_names
        )

    @property
    def connections(self) -> ec2.Connections:
        """The security groups of an inference-component endpoint's instances in a VPC (``ec2.IConnectable``)."""
        if self.placement is None:
            raise ValueError(f"{self.node.path}: the endpoint config is in no VPC; give vpc= to connect it")
        return self.placement.connections


def _check(
    model: IModel | None,
    variants: Sequence[InstanceVariant],
    serverless: ServerlessVariant | None,
    data_capture: DataCaptureSettings | None,
    async_inference: AsyncSettings | None,
    shadow_variants: Sequence[InstanceVariant],
    metrics: MetricsSettings,
) -> None:
    """Refuse what CreateEndpointConfig would: the metrics frequency, the variants of a model's or a component
    pool's config, volumes on instance storage, and shadow variants other than one beside one production."""
    if metrics.publish_frequency_seconds not in METRICS_PUBLISH_FREQUENCIES_S:
        raise ValueError(
            f"Invalid endpoint config: metrics publish_frequency_seconds={metrics.publish_frequency_seconds} "
            f"(one of {METRICS_PUBLISH_FREQUENCIES_S})"
        )
    if model is None:
        _validate_component_pool(variants, serverless, data_capture, async_inference, shadow_variants)
    else:
        _validate(variants, serverless, data_capture, async_inference)
    volume_problems = [
        f"variant {v.name!r}: volume_size={v.volume_size_gb} GiB: {volume_message(v.instance_type.name)}"
        for v in (*variants, *shadow_variants)
        if v.volume_size is not None and has_instance_storage(v.instance_type.name)
    ] + [
        f"variant {v.name!r}: volume_size={v.volume_size_gb} GiB: {volume_message(t)}"
        for v in variants
        for t in v.instance_types[1:]
        if v.volume_size is not None and has_instance_storage(t)
    ]
    if volume_problems:
        raise ValueError("Invalid endpoint config: " + "; ".join(volume_problems))
    if shadow_variants and (len(variants) != 1 or len(shadow_variants) != 1):
        raise ValueError(
            "Invalid endpoint config: shadow variants need exactly one production and one shadow variant "
            "(CreateEndpointConfig ShadowProductionVariants)"
        )


def _validate(
    variants: Sequence[InstanceVariant],
    serverless: ServerlessVariant | None,
    data_capture: DataCaptureSettings | None,
    async_inference: AsyncSettings | None,
) -> None:
    problems = []
    if (serverless is None) == (not variants):
        problems.append("give either instance variants or one serverless variant")
    for v in variants:
        if v.initial_instance_count < 1:
            problems.append(
                f"variant {v.name!r}: initial_instance_count={v.initial_instance_count} (must be >= 1)"
            )
        if v.initial_weight < MIN_VARIANT_WEIGHT:
            problems.append(
                f"variant {v.name!r}: initial_weight={v.initial_weight} (must be >= {MIN_VARIANT_WEIGHT})"
            )
        problems.extend(pool_problems(v.name, v.pools, v.provision_timeout_seconds))
    if variants and not any(v.initial_weight for v in variants):
        problems.append("the variants' initial_weight values sum to 0 (at least one must be above 0)")
    if serverless is not None:
        if serverless.memory_size_mb not in SERVERLESS_MEMORY_MB:
            problems.append(
                f"serverless memory_size={serverless.memory_size_mb} MiB (one of {SERVERLESS_MEMORY_MB} MiB)"
            )
        if (
            serverless.provisioned_concurrency
            and serverless.provisioned_concurrency > serverless.max_concurrency
        ):
            problems.append("serverless provisioned_concurrency must be <= max_concurrency")
        if data_capture is not None:
            problems.append("serverless endpoints do not support data capture")
        if async_inference is not None:
            problems.append("serverless endpoints cannot be asynchronous")
    if data_capture is not None and not data_capture.capture:
        problems.append(f"data capture modes [] (choose from {[m.name for m in CaptureMode]})")
    if problems:
        raise ValueError("Invalid endpoint config: " + "; ".join(problems))


def pool_problems(name: str, pools: Sequence[tuple[str, int]], timeout: int | None) -> list[str]:
    """What CreateEndpointConfig would refuse in a variant's instance pools (1-5 pools, priorities 1-5 each
    once, types each once, the timeout 300-3600 s with pools only). https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-heterogeneous.html"""
    problems = []
    if len(pools) > 5:
        problems.append(f"variant {name!r}: {len(pools)} instance pools (at most 5)")
    priorities = [p for _, p in pools]
    types = [t for t, _ in pools]
    if len(set(priorities)) != len(priorities) or any(not 1 <= p <= 5 for p in priorities):
        problems.append(f"variant {name!r}: instance pool priorities {priorities} (each of 1-5 once)")
    if len(set(types)) != len(types):
        problems.append(f"variant {name!r}: instance pool types {types} (each type once)")
    if timeout is not None and (not pools or not 300 <= timeout <= 3600):
        problems.append(
            f"variant {name!r}: instance_provision_timeout={timeout} s (300-3600, with instance pools only)"
        )
    return problems


def instance_pools(
    pools: Sequence[tuple[str, int]],
) -> list[sagemaker.CfnEndpointConfig.InstancePoolProperty] | None:
    """ProductionVariant.InstancePools, by priority (None: one InstanceType)."""
    return [
        sagemaker.CfnEndpointConfig.InstancePoolProperty(instance_type=t, priority=p)
        for t, p in sorted(pools, key=lambda pool: pool[1])
    ] or None


def _instance(
    model_name: str | None, v: InstanceVariant, kms_key_arn: str | None = None
) -> sagemaker.CfnEndpointConfig.ProductionVariantProperty:
    """A ProductionVariant; without ``model_name`` the model-less pool of an inference-component endpoint."""
    return sagemaker.CfnEndpointConfig.ProductionVariantProperty(
        variant_name=v.name,
        model_name=v.model.model_name if v.model is not None else model_name,
        # The pools replace InstanceType (realtime-endpoints-heterogeneous.html).
        instance_type=None if v.instance_pools else v.instance_type.name,
        instance_pools=instance_pools(v.pools),
        variant_instance_provision_timeout_in_seconds=v.provision_timeout_seconds,
        initial_instance_count=v.initial_instance_count,
        # Components are placed on the pool's instances: there is no traffic split to weigh.
        initial_variant_weight=None if model_name is None else v.initial_weight,
        volume_size_in_gb=v.volume_size_gb,
        model_data_download_timeout_in_seconds=_seconds(v.model_data_download_timeout),
        container_startup_health_check_timeout_in_seconds=_seconds(v.container_startup_health_check_timeout),
        routing_config=(
            sagemaker.CfnEndpointConfig.RoutingConfigProperty(routing_strategy=v.routing.value)
            if v.routing
            else None
        ),
        inference_ami_version=v.inference_ami_version,
        capacity_reservation_config=capacity_reservation(v.capacity_reservation_arn),
        managed_instance_scaling=_managed_scaling(v.managed_instance_scaling),
        core_dump_config=(
            sagemaker.CfnEndpointConfig.CoreDumpConfigProperty(
                destination_s3_uri=v.core_dump_s3_uri, kms_key_id=kms_key_arn
            )
            if v.core_dump_s3_uri
            else None
        ),
        enable_ssm_access=True if v.ssm_access else None,
    )


def _managed_scaling(
    m: ManagedInstanceScaling | None,
) -> sagemaker.CfnEndpointConfig.ManagedInstanceScalingProperty | None:
    if m is None:
        return None
    return sagemaker.CfnEndpointConfig.ManagedInstanceScalingProperty(
        status="ENABLED",
        min_instance_count=m.min_instances,
        max_instance_count=m.max_instances,
        scale_in_policy=(
            sagemaker.CfnEndpointConfig.ScaleInPolicyProperty(strategy=m.scale_in.value)
            if m.scale_in
            else None
        ),
    )


def _validate_component_pool(
    variants: Sequence[InstanceVariant],
    serverless: ServerlessVariant | None,
    data_capture: DataCaptureSettings | None,
    async_inference: AsyncSettings | None,
    shadow_variants: Sequence[InstanceVariant],
) -> None:
    """An inference-component endpoint's config: one instance pool with managed instance scaling."""
    if (
        len(variants) != 1
        or variants[0].managed_instance_scaling is None
        or serverless
        or data_capture
        or async_inference
        or shadow_variants
    ):
        raise ValueError(
            "Invalid endpoint config: without model_name (an endpoint hosting inference components) give "
            "exactly one instance variant with managed_instance_scaling, and no serverless variant, data "
            "capture, async inference or shadow variants"
        )
    v = variants[0]
    m = v.managed_instance_scaling
    assert m is not None
    problems = []
    if v.initial_instance_count < 1:
        problems.append(f"initial_instance_count={v.initial_instance_count} (must be >= 1)")
    if m.min_instances < 0 or m.max_instances < max(m.min_instances, 1):
        problems.append(
            f"min_instances={m.min_instances}, max_instances={m.max_instances} (need 0 <= min <= max, max >= 1)"
        )
    problems.extend(
        p.removeprefix(f"variant {v.name!r}: ")
        for p in pool_problems(v.name, v.pools, v.provision_timeout_seconds)
    )
    if v.volume_size is not None and has_instance_storage(v.instance_type.name):
        problems.append(f"volume_size={v.volume_size_gb} GiB: {volume_message(v.instance_type.name)}")
    if problems:
        raise ValueError(f"Invalid inference-component variant {v.name!r}: " + "; ".join(problems))


def capacity_reservation(
    arn: str | None,
) -> sagemaker.CfnEndpointConfig.CapacityReservationConfigProperty | None:
    """ProductionVariant.CapacityReservationConfig: only the reservation's instances (the one preference AWS
    offers). https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariantCapacityReservationConfig.html"""
    if arn is None:
        return None
    return sagemaker.CfnEndpointConfig.CapacityReservationConfigProperty(
        capacity_reservation_preference="capacity-reservations-only", ml_reservation_arn=arn
    )


def _serverless(
    model_name: str, s: ServerlessVariant
) -> sagemaker.CfnEndpointConfig.ProductionVariantProperty:
    return sagemaker.CfnEndpointConfig.ProductionVariantProperty(
        variant_name=s.name,
        model_name=model_name,
        serverless_config=sagemaker.CfnEndpointConfig.ServerlessConfigProperty(
            memory_size_in_mb=s.memory_size_mb,
            max_concurrency=s.max_concurrency,
            provisioned_concurrency=s.provisioned_concurrency,
        ),
    )


def _capture(
    d: DataCaptureSettings, kms_key_arn: str
) -> sagemaker.CfnEndpointConfig.DataCaptureConfigProperty:
    return sagemaker.CfnEndpointConfig.DataCaptureConfigProperty(
        enable_capture=True,
        initial_sampling_percentage=d.sampling_percentage,
        destination_s3_uri=d.destination_s3_uri,
        kms_key_id=kms_key_arn,
        capture_options=[
            sagemaker.CfnEndpointConfig.CaptureOptionProperty(capture_mode=m.value) for m in d.capture
        ],
        capture_content_type_header=(
            sagemaker.CfnEndpointConfig.CaptureContentTypeHeaderProperty(
                csv_content_types=list(d.csv_content_types) or None,
                json_content_types=list(d.json_content_types) or None,
            )
            if d.csv_content_types or d.json_content_types
            else None
        ),
    )


def _async(a: AsyncSettings, kms_key_arn: str) -> sagemaker.CfnEndpointConfig.AsyncInferenceConfigProperty:
    notification = None
    if a.success_topic_arn or a.error_topic_arn:
        notification = sagemaker.CfnEndpointConfig.AsyncInferenceNotificationConfigProperty(
            success_topic=a.success_topic_arn,
            error_topic=a.error_topic_arn,
            # Off by default: every subscriber would get a copy of the inference payload.
            include_inference_response_in=(
                ["SUCCESS_NOTIFICATION_TOPIC", "ERROR_NOTIFICATION_TOPIC"]
                if a.include_response_in_notifications
                else None
            ),
        )
    return sagemaker.CfnEndpointConfig.AsyncInferenceConfigProperty(
        output_config=sagemaker.CfnEndpointConfig.AsyncInferenceOutputConfigProperty(
            s3_output_path=a.output_s3_uri,
            s3_failure_path=a.failure_s3_uri,
            kms_key_id=kms_key_arn,
            notification_config=notification,
        ),
        client_config=(
            sagemaker.CfnEndpointConfig.AsyncInferenceClientConfigProperty(
                max_concurrent_invocations_per_instance=a.max_concurrent_invocations_per_instance
            )
            if a.max_concurrent_invocations_per_instance
            else None
        ),
    )
