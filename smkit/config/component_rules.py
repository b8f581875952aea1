"""Cross-field rules of inference-component endpoints and shadow variants (part of :data:`rules.RULES`).

Limits come from the API reference pages linked in :mod:`smkit.config.components`; instance sizes from the
instance catalogue (:mod:`smkit.aws.instances`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from smkit.aws.instances import instance
from smkit.config.components import (
    CREATE_IC,
    MANAGED_SCALING,
    ROLLING,
    SCALE_TO_ZERO,
    SHADOW,
    SPECIFICATIONS,
    ComputeRequirements,
    CopyScaling,
    InferenceComponentSpec,
    InferenceComponentsSpec,
)
from smkit.config.containers import Container
from smkit.config.endpoint import Variant
from smkit.config.models import DeploymentConfig
from smkit.config.rules import Issue, Rule

PATH = "endpoint.inference_components"


def instance_size(instance_type: str) -> tuple[int, int, int] | None:
    """``(vCPUs, memory MiB, accelerators)`` of ``instance_type`` (:mod:`smkit.aws.instances`), else None."""
    found = instance(instance_type)
    return None if found is None else (found.vcpus, found.memory_mib, found.accelerators)


def shadow_containers(cfg: DeploymentConfig) -> set[str]:
    """Names of the containers that shadow variants serve."""
    return {s.container for s in cfg.endpoint.shadow_variants}


def production_containers(cfg: DeploymentConfig) -> list[Container]:
    """The containers of the production model: ``model.containers`` minus those of shadow variants."""
    shadows = shadow_containers(cfg)
    return [c for c in cfg.model.containers if c.name not in shadows]


def component_layout(cfg: DeploymentConfig) -> Iterable[Issue]:
    """inference-components: its section, one model-less variant, one component per container."""
    ep = cfg.endpoint
    spec = ep.inference_components
    if ep.type != "inference-components":
        if spec is not None:
            yield Issue(PATH, "set", f"only endpoint.type: inference-components takes it, not {ep.type}")
        return
    if spec is None:
        yield Issue(
            PATH,
            None,
            "inference-components needs this section: {instance_scaling: {min_instances: 0, max_instances: 2}, "
            "components: [{name, container, compute: {min_memory_mb: 1024}}]}",
        )
        return
    if len(ep.variants) != 1:
        yield Issue(
            "endpoint.variants",
            f"{len(ep.variants)} variants",
            "an inference-components endpoint has exactly one variant (the instances the components share)",
        )
    for i, v in enumerate(ep.variants):
        if v.autoscaling is not None:
            yield Issue(
                f"endpoint.variants[{i}].autoscaling",
                "set",
                f"instances follow the copies through {PATH}.instance_scaling (ManagedInstanceScaling); "
                f"scale copies with {PATH}.components[].autoscaling instead. {MANAGED_SCALING}",
            )
    if ep.data_capture is not None and ep.data_capture.enabled:
        yield Issue(
            "endpoint.data_capture.enabled",
            True,
            "this kit does not configure data capture for inference-component endpoints; remove it",
        )
    if ep.deployment.strategy != "all-at-once":
        yield Issue(
            "endpoint.deployment.strategy",
            ep.deployment.strategy,
            f"components are updated copy by copy with {PATH}.rolling_update; use all-at-once here. {ROLLING}",
        )
    containers = {c.name for c in cfg.model.containers}
    used = Counter(c.container for c in spec.components if c.container is not None)
    for i, component in enumerate(spec.components):
        if component.container is not None and component.container not in containers:
            yield Issue(
                f"{PATH}.components[{i}].container",
                component.container,
                f"no such entry in model.containers; use one of: {', '.join(sorted(containers))}",
            )
    for name, count in used.items():
        if count > 1:
            yield Issue(
                f"{PATH}.components[].container",
                name,
                f"each container backs one component; {name!r} is used {count} times",
            )
    for name in sorted(containers - set(used)):
        yield Issue(
            "model.containers[].name", name, f"not used by any component; add one to {PATH}.components"
        )
    for name, count in Counter(c.name for c in spec.components).items():
        if count > 1:
            yield Issue(
                f"{PATH}.components[].name", name, f"names must be unique; {name!r} appears {count} times"
            )


def component_capacity(cfg: DeploymentConfig) -> Iterable[Issue]:
    """Copies, copy scaling, instance scaling and each copy's fit on one instance."""
    spec = cfg.endpoint.inference_components
    if cfg.endpoint.type != "inference-components" or spec is None or not cfg.endpoint.variants:
        return
    variant = cfg.endpoint.variants[0]
    yield from _instance_bounds(spec, variant)
    for i, component in enumerate(spec.components):
        yield from _component_fit(f"{PATH}.components[{i}]", component, variant)
    yield from _instances_to_zero(spec)
    rolling = spec.rolling_update
    if rolling is not None and (rolling.batch_copies is None) == (rolling.batch_percent is None):
        yield Issue(
            f"{PATH}.rolling_update",
            "batch size",
            f"set exactly one of batch_copies (COPY_COUNT) or batch_percent (CAPACITY_PERCENT). {ROLLING}",
        )


def _instance_bounds(spec: InferenceComponentsSpec, variant: Variant) -> Iterable[Issue]:
    """``instance_scaling``'s bounds, and the variant's initial instance count within them."""
    scaling = spec.instance_scaling
    if scaling.max_instances < scaling.min_instances:
        yield Issue(
            f"{PATH}.instance_scaling.max_instances",
            scaling.max_instances,
            f"must be >= min_instances ({scaling.min_instances})",
        )
    if not max(scaling.min_instances, 1) <= variant.initial_instance_count <= scaling.max_instances:
        yield Issue(
            "endpoint.variants[0].initial_instance_count",
            variant.initial_instance_count,
            f"must lie between max(1, min_instances) and max_instances ({scaling.max_instances})",
        )


def _instances_to_zero(spec: InferenceComponentsSpec) -> Iterable[Issue]:
    """``min_instances: 0`` needs every base component able to scale to zero copies."""
    if spec.instance_scaling.min_instances != 0:
        return
    fixed = [
        c.name
        for c in spec.components
        if c.base_component is None and (c.autoscaling is None or c.autoscaling.min_copies > 0)
    ]
    if fixed:
        yield Issue(
            f"{PATH}.instance_scaling.min_instances",
            0,
            f"instances reach zero only when every component can: give {', '.join(fixed)} "
            f"autoscaling with min_copies: 0, or set min_instances >= 1. {SCALE_TO_ZERO}",
        )


def _component_fit(path: str, component: InferenceComponentSpec, variant: Variant) -> Iterable[Issue]:
    """One component's copies and copy scaling, its per-instance-type entries, its metrics path, and one copy's
    fit on each instance type of the variant."""
    yield from _copy_scaling(path, component.copies, component.autoscaling)
    yield from _per_instance_type(path, component, variant.pool_types, bool(variant.instance_pools))
    if component.metrics_path is not None and component.base_component is not None:
        yield Issue(
            f"{path}.metrics_path",
            component.metrics_path,
            "an adapter runs in its base component's container, which serves the metrics; set metrics_path "
            f"on the base component {component.base_component!r} instead",
        )
    compute = component.compute
    if compute is None:
        return  # an adapter (smkit.config.hosting_rules)
    # With instance pools a copy must fit every pool's type: compute on the types per_instance_type does not
    # list, each entry's own compute on its type.
    entries = component.per_instance_type or ()
    for j, entry in enumerate(entries):
        yield from _fits(f"{path}.per_instance_type[{j}]", entry.instance_type, entry.compute)
    if compute.max_memory_mb is not None and compute.max_memory_mb < compute.min_memory_mb:
        yield Issue(
            f"{path}.compute.max_memory_mb",
            compute.max_memory_mb,
            f"must be >= min_memory_mb ({compute.min_memory_mb})",
        )
    listed = {e.instance_type for e in entries}
    for instance_type in variant.pool_types:
        if instance_type not in listed:
            yield from _fits(path, instance_type, compute)


def _per_instance_type(
    path: str, component: InferenceComponentSpec, pool_types: tuple[str, ...], pooled: bool
) -> Iterable[Issue]:
    """``per_instance_type``: a pooled variant, each entry one of its pool types once, and a base component."""
    entries = component.per_instance_type
    if not entries:
        return
    types = [e.instance_type for e in entries]
    if component.base_component is not None:
        yield Issue(
            f"{path}.per_instance_type",
            types,
            "an adapter has no Specifications of its own (BaseInferenceComponentName is accepted only on the "
            f"single Specification); remove per_instance_type. {SPECIFICATIONS}",
        )
    if not pooled or len(pool_types) < 2:
        yield Issue(
            f"{path}.per_instance_type",
            types,
            "Specifications need a variant with at least two instance_pools (2-5 entries, one per type); give "
            f"endpoint.variants[0].instance_pools or remove per_instance_type. {SPECIFICATIONS}",
        )
        return
    for j, t in enumerate(types):
        if t not in pool_types:
            yield Issue(
                f"{path}.per_instance_type[{j}].instance_type",
                t,
                f"not one of the variant's instance pools ({', '.join(pool_types)}); use one of them",
            )
    repeated = sorted({t for t in types if types.count(t) > 1})
    if repeated:
        yield Issue(
            f"{path}.per_instance_type",
            types,
            f"{', '.join(repeated)} listed more than once; give each pool type at most one entry",
        )


def _copy_scaling(path: str, copies: int, autoscaling: CopyScaling | None) -> Iterable[Issue]:
    if autoscaling is None:
        return
    a = autoscaling
    if a.max_copies < a.min_copies:
        yield Issue(f"{path}.autoscaling.max_copies", a.max_copies, f"must be >= min_copies ({a.min_copies})")
    if not a.min_copies <= copies <= a.max_copies:
        yield Issue(
            f"{path}.copies",
            copies,
            f"the copy count at creation must lie between min_copies ({a.min_copies}) and max_copies "
            f"({a.max_copies}), and be >= 1. {CREATE_IC}",
        )


def _fits(path: str, instance_type: str, compute: ComputeRequirements) -> Iterable[Issue]:
    """One copy's ``compute`` on one ``instance_type`` (nothing where the catalogue does not size the type)."""
    size = instance_size(instance_type)
    if size is None:
        return
    memory_mb, cpu_cores, accelerators = compute.min_memory_mb, compute.cpu_cores, compute.accelerators
    cpus, memory, gpus = size
    if memory_mb > memory:
        yield Issue(
            f"{path}.compute.min_memory_mb",
            memory_mb,
            f"one copy must fit on one {instance_type} ({memory} MiB); lower it or pick a larger instance_type",
        )
    if cpu_cores is not None and cpu_cores > cpus:
        yield Issue(
            f"{path}.compute.cpu_cores",
            cpu_cores,
            f"one copy must fit on one {instance_type} ({cpus} vCPUs); lower it or pick a larger instance_type",
        )
    if accelerators is not None and accelerators > gpus:
        yield Issue(
            f"{path}.compute.accelerators",
            accelerators,
            f"{instance_type} has {gpus} accelerator(s); pick a GPU instance type such as ml.g5.xlarge",
        )


def shadow_variants(cfg: DeploymentConfig) -> Iterable[Issue]:
    """Shadow variants: realtime only, one production variant, their own container, data capture on."""
    ep = cfg.endpoint
    shadows = ep.shadow_variants
    if not shadows:
        return
    if ep.type != "realtime":
        yield Issue(
            "endpoint.shadow_variants",
            [s.name for s in shadows],
            f"only realtime endpoints take them, not {ep.type}",
        )
        return
    if len(ep.variants) != 1:
        yield Issue(
            "endpoint.variants",
            f"{len(ep.variants)} variants",
            f"with shadow_variants, exactly one production variant serves the callers. {SHADOW}",
        )
    containers = {c.name for c in cfg.model.containers}
    production = {v.name for v in ep.variants}
    for i, s in enumerate(shadows):
        if s.container not in containers:
            yield Issue(
                f"endpoint.shadow_variants[{i}].container",
                s.container,
                f"no such entry in model.containers; use one of: {', '.join(sorted(containers))}",
            )
        if s.name in production:
            yield Issue(
                f"endpoint.shadow_variants[{i}].name", s.name, "must differ from the production variant's"
            )
    if not production_containers(cfg):
        yield Issue(
            "model.containers",
            sorted(containers),
            "every container is a shadow's; add the production model's container",
        )
    capture = ep.data_capture
    if capture is None or not capture.enabled or "output" not in capture.capture:
        yield Issue(
            "endpoint.data_capture",
            None if capture is None else "without output",
            "a shadow's answers are never returned; enable data capture with capture: [input, output] to keep them",
        )


RULES: tuple[Rule, ...] = (component_layout, component_capacity, shadow_variants)
