"""The inference-component half of :class:`smkit.cdk.serving_stack.ServingStack`.

For ``endpoint.type: inference-components``: one SageMaker Model per container, a model-less endpoint
config with managed instance scaling, the endpoint, and per component an InferenceComponent, its copy
autoscaling and its alarms (which also roll back its rolling updates), all read from the resolved
deployment's components (:class:`smkit.config.resolved.ResolvedComponents`). The renaming of their fields
into construct arguments lives here too, next to the only code that uses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Duration, Size
from aws_cdk import aws_kms as kms
from aws_cdk.aws_logs import ILogGroup
from constructs import Construct

from smkit.cdk import mapping
from smkit.cdk.constructs.autoscaling import EndpointAutoscaling, ScalingSettings, ScalingTarget
from smkit.cdk.constructs.endpoint import InferenceEndpoint
from smkit.cdk.constructs.endpoint_config import (
    EndpointConfiguration,
    InstanceType,
    InstanceVariant,
    ManagedInstanceScaling,
    RoutingStrategy,
    ScaleInStrategy,
)
from smkit.cdk.constructs.execution_role import ExecutionRole
from smkit.cdk.constructs.inference_component import (
    AdapterSource,
    ComponentCompute,
    ComponentPlacement,
    CopyBatchUnit,
    InferenceComponent,
    MetricsEndpoint,
    PlacementStrategy,
    RollingUpdateSettings,
)
from smkit.cdk.constructs.logical_ids import pascal
from smkit.cdk.constructs.logs import DeploymentLogs
from smkit.cdk.constructs.model import ContainerSpec, InferenceModel
from smkit.cdk.constructs.model_data import ModelData, grant_read_s3
from smkit.cdk.constructs.monitoring import EndpointMonitoring
from smkit.cdk.constructs.storage import EndpointBucket
from smkit.config.components import ComputeRequirements, CopyScaling, InferenceComponentSpec, RollingUpdate
from smkit.config.resolved import ResolvedComponents, ResolvedDeployment, ResolvedVariant
from smkit.config.resolved.names import ENDPOINT_ID, component_id


@dataclass(frozen=True)
class ComponentParts:
    """What :func:`add_inference_components` built."""

    endpoint_config: EndpointConfiguration
    endpoint: InferenceEndpoint
    models: dict[str, InferenceModel]
    components: dict[str, InferenceComponent]
    scaling: dict[str, EndpointAutoscaling]
    monitoring: EndpointMonitoring | None


def rolling_update(r: RollingUpdate | None) -> RollingUpdateSettings | None:
    """RollingUpdatePolicy settings from ``endpoint.inference_components.rolling_update``."""
    if r is None:
        return None
    unit, batch_value = (
        (CopyBatchUnit.COPY_COUNT, r.batch_copies)
        if r.batch_copies
        else (CopyBatchUnit.CAPACITY_PERCENT, r.batch_percent)
    )
    assert batch_value is not None, "config rules require one batch size"
    return RollingUpdateSettings(
        batch_unit=unit,
        batch_value=batch_value,
        wait_interval=Duration.seconds(r.wait_interval_seconds),
        max_execution_timeout=mapping.seconds(r.max_execution_timeout_seconds),
        rollback_batch_copies=r.rollback_batch_copies,
        auto_rollback=r.auto_rollback,
    )


def _compute(c: ComputeRequirements) -> ComponentCompute:
    return ComponentCompute(
        min_memory=Size.mebibytes(c.min_memory_mb),
        max_memory=None if c.max_memory_mb is None else Size.mebibytes(c.max_memory_mb),
        cpu_cores=c.cpu_cores,
        accelerators=c.accelerators,
    )


def per_instance_type(spec: ResolvedComponents, name: str) -> list[tuple[str, ComponentCompute]]:
    """Specifications of component ``name``: every pool type with its compute (empty: one Specification)."""
    return [(t, _compute(c)) for t, c in spec.specifications.get(name, ())]


def component_variant(
    v: ResolvedVariant, spec: ResolvedComponents, storage: EndpointBucket | None = None
) -> InstanceVariant:
    """The instance pool of the endpoint (core dumps go to ``storage``)."""
    assert v.instance_type is not None, "an inference-component endpoint runs on instances"
    return InstanceVariant(
        name=v.name,
        instance_type=InstanceType.of(v.instance_type),
        initial_instance_count=v.initial_instance_count,
        managed_instance_scaling=ManagedInstanceScaling(
            min_instances=spec.instance_scaling.min_instances,
            max_instances=spec.instance_scaling.max_instances,
            scale_in=ScaleInStrategy.of(spec.instance_scaling.scale_in)
            if spec.instance_scaling.scale_in
            else None,
        ),
        volume_size=mapping.gibibytes(v.volume_size_gb),
        routing=RoutingStrategy.of(v.routing) if v.routing else None,
        inference_ami_version=v.inference_ami_version,
        capacity_reservation_arn=v.capacity_reservation_arn,
        instance_pools=tuple((InstanceType.of(p.instance_type), p.priority) for p in v.instance_pools),
        instance_provision_timeout=mapping.seconds(v.instance_provision_timeout_s),
        core_dump_s3_uri=mapping.core_dump_uri(v, storage),
        ssm_access=v.ssm_access,
    )


def add_inference_components(
    scope: Construct,
    *,
    deployment: ResolvedDeployment,
    containers: Mapping[str, ContainerSpec],
    role: ExecutionRole,
    encryption_key: kms.IKey,
    vpc: mapping.Network,
    logs: DeploymentLogs,
    storage: EndpointBucket | None = None,
) -> ComponentParts:
    """Add the models, endpoint config, endpoint, components, scaling and alarms of ``deployment``; each base
    component's log group in ``logs`` (an adapter logs in its base component's)."""
    spec = deployment.components
    assert spec is not None, "an inference-components endpoint resolves its components"
    models = _models(scope, deployment, containers, role, vpc, logs.helpers)
    endpoint_config = EndpointConfiguration(
        scope,
        "EndpointConfig",
        variants=[component_variant(deployment.variants[0], spec, storage)],
        role=role.role,
        key=encryption_key,
        network_isolation=deployment.network_isolation,
        **vpc,
        metrics=mapping.metrics_settings(deployment),
    )
    # SageMaker starts the components' containers with this role: its policy must be in place first.
    endpoint_config.resource.node.add_dependency(role.policy)
    endpoint = InferenceEndpoint(
        scope,
        ENDPOINT_ID,
        endpoint_config=endpoint_config,
        deployment=mapping.guardrails(deployment),
    )
    variant_name = endpoint_config.variant_names[0]
    rollout = rolling_update(spec.rolling_update)
    components: dict[str, InferenceComponent] = {}
    scaling: dict[str, EndpointAutoscaling] = {}
    for ic in spec.bases:
        component = _base_component(scope, deployment, ic, endpoint, variant_name, models, rollout)
        components[ic.name] = component
        # SageMaker would create the component's log group on first use, without retention or key.
        component.node.add_dependency(
            logs.add_component_group(component_id(ic.name), component.component_name)
        )
        if ic.autoscaling is not None:
            scaling[ic.name] = _copy_scaling(scope, ic.name, ic.autoscaling, component)
    adapters = _adapters(scope, spec, components, endpoint, variant_name, role, storage, logs)
    monitoring = _monitoring(scope, deployment, endpoint, components, adapters, encryption_key, role)
    return ComponentParts(endpoint_config, endpoint, models, {**components, **adapters}, scaling, monitoring)


def _models(
    scope: Construct,
    deployment: ResolvedDeployment,
    containers: Mapping[str, ContainerSpec],
    role: ExecutionRole,
    vpc: mapping.Network,
    log_group: ILogGroup,
) -> dict[str, InferenceModel]:
    """One SageMaker Model per container of ``deployment``, by container name (``log_group``: the logs of
    the function that creates a model with channels)."""
    models = {}
    for c in deployment.containers:
        model = InferenceModel(
            scope,
            f"Model{pascal(c.name)}",
            role=role.role,
            containers=[containers[c.name]],
            network_isolation=deployment.network_isolation,
            log_group=log_group,
            **vpc,
        )
        # CreateModel checks image pull and data access with the role: wait for every access policy (ECR
        # login and metrics included), as the other endpoint types' models do.
        model.resource.node.add_dependency(*role.access_policies)
        models[c.name] = model
    return models


def _base_component(
    scope: Construct,
    deployment: ResolvedDeployment,
    ic: InferenceComponentSpec,
    endpoint: InferenceEndpoint,
    variant_name: str,
    models: Mapping[str, InferenceModel],
    rollout: RollingUpdateSettings | None,
) -> InferenceComponent:
    """A base (non-adapter) component: its model, compute, copies, startup limits, placement and metrics."""
    assert ic.container is not None and ic.compute is not None  # smkit.config.hosting_rules
    spec = deployment.components
    assert spec is not None
    return InferenceComponent(
        scope,
        component_id(ic.name),
        endpoint=endpoint,
        variant_name=variant_name,
        model=models[ic.container],
        compute=_compute(ic.compute),
        copies=ic.copies,
        model_data_download_timeout=mapping.seconds(ic.model_data_download_timeout_seconds),
        container_startup_health_check_timeout=mapping.seconds(
            ic.container_startup_health_check_timeout_seconds
        ),
        rolling_update=rollout,
        placement=ComponentPlacement(
            placement=PlacementStrategy.of(ic.scheduling.placement) if ic.scheduling else None,
            max_az_imbalance=ic.scheduling.max_az_imbalance if ic.scheduling else None,
            data_cache=ic.data_cache,
        ),
        per_instance_type=per_instance_type(spec, ic.name),
        metrics_endpoint=(
            MetricsEndpoint(ic.metrics_path, deployment.metrics.publish_frequency_seconds)
            if ic.metrics_path
            else None
        ),
    )


def _copy_scaling(
    scope: Construct, name: str, a: CopyScaling, component: InferenceComponent
) -> EndpointAutoscaling:
    """Target tracking on the copies of ``component`` (and the step out of zero copies)."""
    target = EndpointAutoscaling(
        scope,
        f"Autoscaling{pascal(name)}",
        component_name=component.component_name,
        settings=ScalingSettings(
            ScalingTarget.INVOCATIONS_PER_COPY,
            min_capacity=a.min_copies,
            max_capacity=a.max_copies,
            target_value=a.target_invocations_per_copy,
            scale_in_cooldown=Duration.seconds(a.scale_in_cooldown_seconds),
            scale_out_cooldown=Duration.seconds(a.scale_out_cooldown_seconds),
            scale_from_zero_cooldown=Duration.seconds(a.scale_from_zero_cooldown_seconds),
        ),
    )
    # Application Auto Scaling registers an existing component only.
    target.node.add_dependency(component.resource)
    return target


def _monitoring(
    scope: Construct,
    deployment: ResolvedDeployment,
    endpoint: InferenceEndpoint,
    components: Mapping[str, InferenceComponent],
    adapters: Mapping[str, InferenceComponent],
    encryption_key: kms.IKey,
    role: ExecutionRole,
) -> EndpointMonitoring | None:
    """The alarms of the endpoint and of every component, which also roll back the bases' rolling updates."""
    if not deployment.monitoring.alarms:
        return None
    monitoring = EndpointMonitoring(
        scope,
        "Monitoring",
        endpoint=endpoint,
        # An adapter's traffic has metrics of its own (InferenceComponentName): the same alarms as a base's.
        components={**components, **adapters},
        thresholds=mapping.thresholds(deployment),
        encryption_key=encryption_key,
        subscribers=mapping.subscribers(deployment),
    )
    for name, component in components.items():  # an adapter has no rolling update of its own
        component.add_rollback_alarms(*monitoring.rollback_alarms_of(name))
    # SageMaker reads the alarms a component's rolling update names with the execution role; no
    # grant for alarms nothing names.
    named = [a for c in components.values() for a in c.named_rollback_alarms]
    if named:
        grant = monitoring.grant_describe_rollback_alarms(role.separate_policy("RollbackAlarms"), named)
        grant.apply_before(*components.values())
    return monitoring


def _adapters(
    scope: Construct,
    spec: ResolvedComponents,
    bases: Mapping[str, InferenceComponent],
    endpoint: InferenceEndpoint,
    variant_name: str,
    role: ExecutionRole,
    storage: EndpointBucket | None,
    logs: DeploymentLogs,
) -> dict[str, InferenceComponent]:
    """Adapter components on their base components; the role may read each adapter's weights (a local folder's
    archive, ``smkit package``'s, is first copied into the endpoint bucket as a model archive is)."""
    out = {}
    for ic in spec.adapters:
        assert ic.base_component is not None  # smkit.config.hosting_rules
        base = bases[ic.base_component]
        upload = None
        if ic.artifact_path is not None:
            archive = spec.adapter_archives[ic.name]
            if not archive.is_file() or storage is None:
                raise FileNotFoundError(
                    f"adapter component {ic.name}: its archive {archive} (of artifact_path {ic.artifact_path}) "
                    "does not exist; package it first: `smkit package --config CONFIG` (smkit synth and deploy "
                    "do it too)"
                )
            upload = ModelData.from_archive(archive).bind(
                scope,
                f"Adapter{pascal(ic.name)}Data",
                grantee=role,
                bucket=storage.bucket,
                log_group=logs.helpers,
            )
            artifact_url = upload.model_data_url
        else:
            artifact_url = ic.artifact_url
        assert artifact_url is not None  # smkit.config.hosting_rules: artifact_url or artifact_path
        adapter = InferenceComponent(
            scope,
            component_id(ic.name),
            endpoint=endpoint,
            variant_name=variant_name,
            adapter=AdapterSource(base_component_name=base.component_name, artifact_url=artifact_url),
        )
        # The base is named by its physical name (a string): CloudFormation must create it first.
        adapter.node.add_dependency(base.resource)
        if upload is not None and upload.dependency is not None:
            adapter.node.add_dependency(upload.dependency)  # the archive is in the bucket first
        else:
            # One object: the config rules refuse an adapter that is not a single .tar.gz.
            grant_read_s3(scope, role, f"Adapter{pascal(ic.name)}", artifact_url, prefix=False)
        out[ic.name] = adapter
    return out
