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

from aws_cdk import aws_kms as kms
from constructs import Construct

from smkit.cdk import mapping
from smkit.cdk.constructs.component_endpoint_config import ComponentEndpointConfiguration, ComponentVariant
from smkit.cdk.constructs.component_monitoring import ComponentMonitoring
from smkit.cdk.constructs.component_scaling import ComponentAutoscaling, CopyScalingSettings
from smkit.cdk.constructs.endpoint import InferenceEndpoint
from smkit.cdk.constructs.execution_role import ExecutionRole
from smkit.cdk.constructs.inference_component import (
    AdapterSource,
    ComponentCompute,
    ComponentPlacement,
    InferenceComponent,
    RollingUpdateSettings,
)
from smkit.cdk.constructs.logs import DeploymentLogs
from smkit.cdk.constructs.model import ContainerSpec, InferenceModel, VpcSettings
from smkit.config.components import ComputeRequirements, RollingUpdate
from smkit.config.resolved import ResolvedComponents, ResolvedDeployment, ResolvedVariant


@dataclass(frozen=True)
class ComponentParts:
    """What :func:`add_inference_components` built."""

    endpoint_config: ComponentEndpointConfiguration
    endpoint: InferenceEndpoint
    models: dict[str, InferenceModel]
    components: dict[str, InferenceComponent]
    scaling: dict[str, ComponentAutoscaling]
    monitoring: ComponentMonitoring | None


def rolling_update(r: RollingUpdate | None) -> RollingUpdateSettings | None:
    """RollingUpdatePolicy settings from ``endpoint.inference_components.rolling_update``."""
    if r is None:
        return None
    batch_type, batch_value = (
        ("COPY_COUNT", r.batch_copies) if r.batch_copies else ("CAPACITY_PERCENT", r.batch_percent)
    )
    assert batch_value is not None, "config rules require one batch size"
    return RollingUpdateSettings(
        batch_type=batch_type,
        batch_value=batch_value,
        wait_interval_seconds=r.wait_interval_seconds,
        max_execution_timeout_seconds=r.max_execution_timeout_seconds,
        rollback_batch_copies=r.rollback_batch_copies,
        auto_rollback=r.auto_rollback,
    )


def _compute(c: ComputeRequirements) -> ComponentCompute:
    return ComponentCompute(
        min_memory_mb=c.min_memory_mb,
        max_memory_mb=c.max_memory_mb,
        cpu_cores=c.cpu_cores,
        accelerators=c.accelerators,
    )


def per_instance_type(spec: ResolvedComponents, name: str) -> list[tuple[str, ComponentCompute]]:
    """Specifications of component ``name``: every pool type with its compute (empty: one Specification)."""
    return [(t, _compute(c)) for t, c in spec.specifications.get(name, ())]


def component_variant(v: ResolvedVariant, spec: ResolvedComponents) -> ComponentVariant:
    """The instance pool of the endpoint."""
    assert v.instance_type is not None, "an inference-component endpoint runs on instances"
    return ComponentVariant(
        name=v.name,
        instance_type=v.instance_type,
        initial_instance_count=v.initial_instance_count,
        min_instances=spec.instance_scaling.min_instances,
        max_instances=spec.instance_scaling.max_instances,
        volume_size_gb=v.volume_size_gb,
        routing=v.routing,
        inference_ami_version=v.inference_ami_version,
        capacity_reservation_arn=v.capacity_reservation_arn,
        scale_in=spec.instance_scaling.scale_in,
        instance_pools=tuple((p.instance_type, p.priority) for p in v.instance_pools),
        instance_provision_timeout_seconds=v.instance_provision_timeout_s,
    )


def add_inference_components(
    scope: Construct,
    *,
    deployment: ResolvedDeployment,
    containers: Mapping[str, ContainerSpec],
    role: ExecutionRole,
    kms_key_arn: str,
    encryption_key: kms.IKey,
    vpc: VpcSettings | None,
    logs: DeploymentLogs,
) -> ComponentParts:
    """Add the models, endpoint config, endpoint, components, scaling and alarms of ``deployment``; each base
    component's log group in ``logs`` (an adapter logs in its base component's)."""
    spec = deployment.components
    assert spec is not None, "an inference-components endpoint resolves its components"
    models = {}
    for c in deployment.containers:
        model = InferenceModel(
            scope,
            f"Model{mapping.pascal(c.name)}",
            execution_role_arn=role.role_arn,
            containers=[containers[c.name]],
            network_isolation=deployment.network_isolation,
            vpc=vpc,
        )
        # CreateModel checks image pull and data access with the role: wait for every access policy (ECR
        # login and metrics included), as the other endpoint types' models do.
        model.resource.node.add_dependency(*role.access_policies)
        models[c.name] = model
    endpoint_config = ComponentEndpointConfiguration(
        scope,
        "EndpointConfig",
        variant=component_variant(deployment.variants[0], spec),
        execution_role_arn=role.role_arn,
        kms_key_arn=kms_key_arn,
        network_isolation=deployment.network_isolation,
        vpc=vpc,
    )
    # SageMaker starts the components' containers with this role: its policy must be in place first.
    endpoint_config.resource.node.add_dependency(role.policy)
    endpoint = InferenceEndpoint(
        scope,
        "Endpoint",
        endpoint_config_name=endpoint_config.endpoint_config_name,
        deployment=mapping.guardrails(deployment),
    )
    rollout = rolling_update(spec.rolling_update)
    components: dict[str, InferenceComponent] = {}
    scaling: dict[str, ComponentAutoscaling] = {}
    for ic in spec.bases:
        assert ic.container is not None and ic.compute is not None  # smkit.config.hosting_rules
        component = InferenceComponent(
            scope,
            f"Component{mapping.pascal(ic.name)}",
            endpoint_name=endpoint.resource.attr_endpoint_name,
            variant_name=endpoint_config.variant_names[0],
            model_name=models[ic.container].model_name,
            compute=ComponentCompute(
                min_memory_mb=ic.compute.min_memory_mb,
                max_memory_mb=ic.compute.max_memory_mb,
                cpu_cores=ic.compute.cpu_cores,
                accelerators=ic.compute.accelerators,
            ),
            copies=ic.copies,
            model_data_download_timeout_seconds=ic.model_data_download_timeout_seconds,
            container_startup_health_check_timeout_seconds=ic.container_startup_health_check_timeout_seconds,
            rolling_update=rollout,
            placement=ComponentPlacement(
                placement=ic.scheduling.placement.upper() if ic.scheduling else None,
                max_az_imbalance=ic.scheduling.max_az_imbalance if ic.scheduling else None,
                data_cache=ic.data_cache,
            ),
            per_instance_type=per_instance_type(spec, ic.name),
        )
        components[ic.name] = component
        # SageMaker would create the component's log group on first use, without retention or key.
        component.node.add_dependency(
            logs.add_component_group(f"Component{mapping.pascal(ic.name)}", component.component_name)
        )
        if ic.autoscaling is not None:
            a = ic.autoscaling
            target = ComponentAutoscaling(
                scope,
                f"Autoscaling{mapping.pascal(ic.name)}",
                component_name=component.component_name,
                settings=CopyScalingSettings(
                    min_copies=a.min_copies,
                    max_copies=a.max_copies,
                    target_invocations_per_copy=a.target_invocations_per_copy,
                    scale_in_cooldown_seconds=a.scale_in_cooldown_seconds,
                    scale_out_cooldown_seconds=a.scale_out_cooldown_seconds,
                    scale_from_zero_cooldown_seconds=a.scale_from_zero_cooldown_seconds,
                ),
            )
            # Application Auto Scaling registers an existing component only.
            target.node.add_dependency(component.resource)
            scaling[ic.name] = target
    adapters = _adapters(scope, spec, components, endpoint, endpoint_config.variant_names[0], role)
    monitoring = None
    if deployment.monitoring.alarms:
        monitoring = ComponentMonitoring(
            scope,
            "Monitoring",
            components=list(components.items()),
            thresholds=mapping.thresholds(deployment),
            encryption_key=encryption_key,
            subscribers=mapping.subscribers(deployment),
        )
        rollback = []
        for name, component in components.items():
            component.add_rollback_alarms(*monitoring.rollback_alarms[name])
            rollback += monitoring.rollback_alarms[name]
        # SageMaker reads the rollback alarms with the execution role.
        policy = role.grant_describe_alarms([a.alarm_arn for a in rollback])
        for component in components.values():
            component.node.add_dependency(policy)
    return ComponentParts(endpoint_config, endpoint, models, {**components, **adapters}, scaling, monitoring)


def _adapters(
    scope: Construct,
    spec: ResolvedComponents,
    bases: Mapping[str, InferenceComponent],
    endpoint: InferenceEndpoint,
    variant_name: str,
    role: ExecutionRole,
) -> dict[str, InferenceComponent]:
    """Adapter components on their base components; the role may read each adapter's weights."""
    out = {}
    for ic in spec.adapters:
        assert ic.artifact_url is not None and ic.base_component is not None  # smkit.config.hosting_rules
        base = bases[ic.base_component]
        adapter = InferenceComponent(
            scope,
            f"Component{mapping.pascal(ic.name)}",
            endpoint_name=endpoint.resource.attr_endpoint_name,
            variant_name=variant_name,
            adapter=AdapterSource(base_component_name=base.component_name, artifact_url=ic.artifact_url),
        )
        # The base is named by its physical name (a string): CloudFormation must create it first.
        adapter.node.add_dependency(base.resource)
        role.grant_s3_read(f"Adapter{mapping.pascal(ic.name)}", ic.artifact_url, prefix=ic.artifact_is_prefix)
        out[ic.name] = adapter
    return out
