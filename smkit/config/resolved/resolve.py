"""Build the :class:`~smkit.config.resolved.deployment.ResolvedDeployment` of a validated config."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, cast

from smkit.aws.instances import instance
from smkit.config.components import ComputeRequirements, InferenceComponentSpec
from smkit.config.containers import Container
from smkit.config.endpoint import DataCapture, Variant
from smkit.config.engine_settings import engine_repository
from smkit.config.local_refusal import refusal
from smkit.config.model_data_rules import ARCHIVE_SUFFIX, s3_kind
from smkit.config.models import DeploymentConfig, variant_paths
from smkit.config.resolved.deployment import (
    DataKind,
    ResolvedChannel,
    ResolvedComponents,
    ResolvedContainer,
    ResolvedDeployment,
    ResolvedModelData,
    ResolvedScaling,
    ResolvedVariant,
)
from smkit.config.resolved.environment import container_environment, profile_of
from smkit.config.resolved.images import ImageError, ResolvedImage, resolve_image
from smkit.config.resolved.paths import adapter_archive, channel_archive, with_absolute_paths
from smkit.config.rules import Issue, written_prefixes
from smkit.contract import REALTIME_PAYLOAD_LIMIT, SERVERLESS_PAYLOAD_LIMIT


class ResolveError(ValueError):
    """The config cannot be resolved; ``issues`` name the fields (raised as ConfigError by the loader)."""

    def __init__(self, issues: list[Issue]) -> None:
        super().__init__("; ".join(str(i) for i in issues))
        self.issues = issues


def model_data(container: Container, *, endpoint_type: str) -> ResolvedModelData:
    """The kind and location of a container's model data (the config rules have checked the forms; a local
    path is already absolute, :func:`~smkit.config.resolved.paths.with_absolute_paths`)."""
    data = container.model_data
    cache = data.cache != "disabled"
    if data.source == "model-package":
        return ResolvedModelData(
            "model-package", uri=data.uri, kms_key_arn=data.kms_key_arn, package=data.package
        )
    if data.source == "s3":
        assert data.uri is not None  # smkit.config.model_data_rules checked its form
        kind = cast(DataKind, s3_kind(data.uri, multi_model_endpoint=endpoint_type == "multi-model"))
        return ResolvedModelData(
            kind,
            uri=data.uri,
            kms_key_arn=data.kms_key_arn,
            cache_enabled=cache,
            accept_eula=data.accept_eula,
        )
    return ResolvedModelData(
        data.source, path=Path(data.local_path), cache_enabled=cache, members=tuple(data.models or ())
    )


def channels(container: Container, *, base_dir: Path, config: str) -> tuple[ResolvedChannel, ...]:
    """A container's additional model data sources (the config rules have checked their forms; local paths
    are already absolute). A ``source: archive`` path that does not end ``.tar.gz`` is a folder, packed into
    :func:`~smkit.config.resolved.paths.channel_archive` by ``smkit package``."""
    out = []
    for ch in container.additional_model_data:
        if ch.source == "s3":
            assert ch.uri is not None  # smkit.config.channel_rules checked its form
            kind = cast(DataKind, s3_kind(ch.uri, multi_model_endpoint=False))
            data = ResolvedModelData(kind, uri=ch.uri, kms_key_arn=ch.kms_key_arn, accept_eula=ch.accept_eula)
            out.append(ResolvedChannel(ch.channel, data))
            continue
        assert ch.path is not None  # smkit.config.channel_rules
        folder = ch.source == "archive" and not ch.path.endswith(ARCHIVE_SUFFIX)
        archive = channel_archive(base_dir, config, container.name, ch.channel) if folder else None
        out.append(ResolvedChannel(ch.channel, ResolvedModelData(ch.source, path=Path(ch.path)), archive))
    return tuple(out)


def _images(cfg: DeploymentConfig) -> tuple[dict[str, ResolvedImage], list[Issue]]:
    """Each container's image by container name, resolved once per distinct image section."""
    out: dict[str, ResolvedImage] = {}
    issues: list[Issue] = []
    done: dict[str, ResolvedImage] = {}
    for i, c in enumerate(cfg.model.containers):
        image = cfg.image_of(c)
        where = f"model.containers[{i}].image" if c.image is not None else "image"
        key = image.model_dump_json()
        if key not in done:
            try:
                done[key] = resolve_image(image, where=where)
            except ImageError as exc:
                issues.append(Issue(exc.field, exc.value, exc.message))
                continue
        out[c.name] = done[key]
    return out, issues


def _variants(cfg: DeploymentConfig, production: tuple[str, ...]) -> tuple[ResolvedVariant, ...]:
    ep = cfg.endpoint
    if ep.type == "serverless" and ep.serverless is not None:
        return (ResolvedVariant(ep.serverless.variant_name, production),)
    return tuple(
        ResolvedVariant(
            v.name,
            production,
            instance_type=v.instance_type,
            vcpus=_vcpus(v.instance_type),
            initial_instance_count=v.initial_instance_count,
            initial_weight=v.initial_weight,
            startup_health_check_timeout_s=v.container_startup_health_check_timeout_seconds,
            volume_size_gb=v.volume_size_gb,
            model_data_download_timeout_s=v.model_data_download_timeout_seconds,
            routing=v.routing,
            inference_ami_version=v.inference_ami_version,
            capacity_reservation_arn=v.capacity_reservation.ml_reservation_arn
            if v.capacity_reservation
            else None,
            instance_pools=tuple(v.instance_pools or ()),
            instance_provision_timeout_s=v.instance_provision_timeout_seconds,
            pool_types=v.pool_types,
            core_dump_prefix=v.core_dumps.prefix.strip("/") if v.core_dumps else None,
            ssm_access=v.ssm_access,
        )
        for v in ep.variants
    )


def _vcpus(instance_type: str) -> int | None:
    found = instance(instance_type)
    return found.vcpus if found else None


def _shadow_variants(cfg: DeploymentConfig) -> tuple[ResolvedVariant, ...]:
    ep = cfg.endpoint
    if not ep.shadow_variants:
        return ()
    weight = ep.variants[0].initial_weight
    return tuple(
        ResolvedVariant(
            s.name,
            (s.container,),
            instance_type=s.instance_type,
            vcpus=_vcpus(s.instance_type),
            initial_instance_count=s.initial_instance_count,
            initial_weight=weight * s.sampling_percentage / 100,
            shadow=True,
            sampling_percentage=s.sampling_percentage,
            routing=s.routing,
            volume_size_gb=s.volume_size_gb,
            pool_types=(s.instance_type,),
        )
        for s in ep.shadow_variants
    )


def _scaling(cfg: DeploymentConfig) -> tuple[ResolvedScaling, ...]:
    """The policy of every variant that autoscales: serverless provisioned concurrency, then the production
    and shadow variants (an async endpoint's by its backlog when ``target_backlog_per_instance`` is set)."""
    out: list[ResolvedScaling] = []
    s = cfg.endpoint.serverless
    if cfg.endpoint.type == "serverless" and s is not None and s.autoscaling is not None:
        a = s.autoscaling
        out.append(
            ResolvedScaling(
                s.variant_name,
                None,
                "provisioned-concurrency",
                a.min_capacity,
                a.max_capacity,
                a.target_utilization,
            )
        )
    for _, v in variant_paths(cfg):
        va = v.autoscaling
        if va is None:
            continue
        if va.target_backlog_per_instance is not None:
            kind, target = "backlog", float(va.target_backlog_per_instance)
        else:
            kind, target = "invocations", float(va.target_invocations_per_instance or 0)
        out.append(
            ResolvedScaling(
                v.name,
                v.instance_type,
                cast(Literal["backlog", "invocations"], kind),
                va.min_capacity,
                va.max_capacity,
                target,
                scale_in_cooldown_s=va.scale_in_cooldown_seconds,
                scale_out_cooldown_s=va.scale_out_cooldown_seconds,
            )
        )
    return tuple(out)


def _specifications(ic: InferenceComponentSpec, pool: Variant) -> tuple[tuple[str, ComputeRequirements], ...]:
    """A component's compute on each instance type of the pooled variant (``per_instance_type``), else none."""
    if not ic.per_instance_type or ic.compute is None:
        return ()
    listed = {e.instance_type: e.compute for e in ic.per_instance_type}
    return tuple((t, listed.get(t, ic.compute)) for t in pool.pool_types)


def _components(cfg: DeploymentConfig, base_dir: Path) -> ResolvedComponents | None:
    spec = cfg.endpoint.inference_components
    if cfg.endpoint.type != "inference-components" or spec is None:
        return None
    pool = cfg.endpoint.variants[0]
    return ResolvedComponents(
        components=tuple(spec.components),
        instance_scaling=spec.instance_scaling,
        rolling_update=spec.rolling_update,
        specifications={
            c.name: _specifications(c, pool) for c in spec.components if c.base_component is None
        },
        adapter_archives={
            c.name: adapter_archive(base_dir, cfg.name, c.name)
            for c in spec.components
            if c.base_component is not None and c.artifact_path is not None
        },
    )


def _data_capture(cfg: DeploymentConfig) -> DataCapture | None:
    capture = cfg.endpoint.data_capture
    return capture if capture is not None and capture.enabled else None


def _containers(
    cfg: DeploymentConfig, images: dict[str, ResolvedImage], base_dir: Path
) -> list[ResolvedContainer]:
    """Each container of the model: its image, model data, channels and the environment SageMaker gives it."""
    endpoint_type = cfg.endpoint.type
    isolation = cfg.model.network_isolation
    # A component's metrics path (ContainerMetricsConfig) is where its container's runtime serves them.
    ics = cfg.endpoint.inference_components
    metrics_paths = {
        ic.container: ic.metrics_path for ic in (ics.components if ics else ()) if ic.metrics_path
    }
    containers = []
    for c in cfg.model.containers:
        data = model_data(c, endpoint_type=endpoint_type)
        image = images[c.name]
        environment = container_environment(
            {**(c.batching.environment() if c.batching else {}), **c.environment},
            endpoint_type=endpoint_type,
            multi_model=data.kind == "multi-model",
            cache_enabled=data.cache_enabled,
            metrics_path=metrics_paths.get(c.name),
            serving_runtime=not (image.source == "dlc" and image.uri and engine_repository(image.uri)),
        )
        containers.append(
            ResolvedContainer(
                name=c.name,
                hostname=c.hostname,
                image=image,
                model_data=data,
                environment=environment,
                profile=profile_of(endpoint_type),
                network_isolation=isolation,
                vendor_wheels=isolation and image.runtime.framework is None,
                channels=channels(c, base_dir=base_dir, config=cfg.name),
            )
        )
    return containers


def resolve(cfg: DeploymentConfig, base_dir: Path) -> ResolvedDeployment:
    """What ``cfg`` means on SageMaker; its relative paths are relative to ``base_dir``.

    A pure function of its arguments: nothing is cached, on the config or elsewhere. Raises
    :class:`ResolveError` listing the fields that cannot be resolved.
    """
    base_dir = base_dir.resolve()
    cfg = with_absolute_paths(cfg, base_dir)
    images, issues = _images(cfg)
    if issues:
        raise ResolveError(issues)
    endpoint_type = cfg.endpoint.type
    isolation = cfg.model.network_isolation
    containers = _containers(cfg, images, base_dir)
    shadows = _shadow_variants(cfg)
    shadow_containers = {name for s in shadows for name in s.containers}
    production = tuple(c.name for c in cfg.model.containers if c.name not in shadow_containers)
    if endpoint_type == "inference-components":
        production = ()  # the components take the traffic, not the variant's own model
    return ResolvedDeployment(
        endpoint_type=endpoint_type,
        containers=tuple(containers),
        variants=_variants(cfg, production),
        shadow_variants=shadows,
        payload_limit=SERVERLESS_PAYLOAD_LIMIT if endpoint_type == "serverless" else REALTIME_PAYLOAD_LIMIT,
        inference_mode=cfg.model.inference_mode if len(production) > 1 else None,
        network_isolation=isolation,
        base_dir=base_dir,
        name=cfg.name,
        environment=cfg.environment,
        account=cfg.account,
        region=cfg.region,
        description=cfg.description,
        tags=dict(cfg.tags),
        serverless=cfg.endpoint.serverless if endpoint_type == "serverless" else None,
        asynchronous=cfg.endpoint.async_ if endpoint_type == "async" else None,
        data_capture=_data_capture(cfg),
        guardrails=cfg.endpoint.deployment,
        scaling=_scaling(cfg),
        components=_components(cfg, base_dir),
        monitoring=cfg.monitoring,
        kms=cfg.security.kms,
        vpc=cfg.security.vpc,
        repository=cfg.security.repository,
        storage=cfg.storage,
        written_prefixes=tuple(written_prefixes(cfg)),
        local=cfg.local,
        local_refusal=refusal(cfg),
        pipeline=cfg.pipeline,
        metrics=cfg.endpoint.metrics,
        artifacts=cfg.security.artifacts,
    )
