"""Cross-field rules of a deployment config.

Each rule is a pure function ``(cfg) -> Iterable[Issue]``; :data:`RULES` is the table applied by the loader.
All issues are collected and reported together. Limits come from docs/hosting-contract.md,
docs/multi-container.md, docs/serverless-async.md, docs/cloudformation.md and the
CloudFormation resource docs linked in :mod:`smkit.config.models` and its sections' modules.
Rules that come from an AWS documentation page (with the page in the message) live in
:mod:`smkit.config.aws_rules`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from smkit.aws.limits import MAX_CONTAINERS, MAX_ENV_BYTES, MAX_ENV_ENTRIES, MAX_ENV_TOTAL_BYTES
from smkit.config.containers import DlcImage
from smkit.config.models import DeploymentConfig, variant_paths
from smkit.contract import (
    MODEL_SERVER_TIMEOUT_SECONDS,
    TS_BATCH_SIZE,
    TS_MAX_BATCH_DELAY,
    RuntimeSettings,
    SettingError,
)

INSTANCE_TYPES = ("realtime", "multi-model", "multi-container", "async")
# Where clients upload async request payloads (the execution role may read it).
ASYNC_INPUT_PREFIX = "async/input"
# A model of a local multi-model set (model_data.models): a model_code/NAME folder, archived as NAME.tar.gz.
SET_MEMBER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")
# ContainerDefinition.Environment, AWS's sentences (botocore's documentation of the member):
# https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ContainerDefinition.html
ENV_URL = "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ContainerDefinition.html"
ENV_COMBINED = "The maximum length of all keys and values in the map, combined, is 32 KB."
ENV_MODEL_COMBINED = (
    "If you pass multiple containers to a CreateModel request, then the maximum length of all of their maps, "
    "combined, is also 32 KB."
)
HOSTNAME_SENTENCE = (
    "If you specify a value for the ContainerHostName for any ContainerDefinition that is part of an inference "
    "pipeline, you must specify a value for the ContainerHostName parameter of every ContainerDefinition in that "
    "pipeline."
)


@dataclass(frozen=True)
class Issue:
    """One problem: the YAML path, the offending value and what is allowed instead."""

    path: str
    value: Any
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.value!r}: {self.message}"


Rule = Callable[[DeploymentConfig], Iterable[Issue]]


def set_fields(section: Any, path: str, fields: Iterable[str], why: Callable[[str], str]) -> Iterator[Issue]:
    """One issue per field of ``fields`` that ``section`` (at ``path``) sets where it does not apply: its path,
    its value and ``why(field)``."""
    for field in fields:
        value = getattr(section, field)
        if value is not None:
            yield Issue(f"{path}.{field}", value, why(field))


def container_count(cfg: DeploymentConfig) -> Iterable[Issue]:
    n = len(cfg.model.containers)
    if cfg.endpoint.type == "multi-container":
        if n < 2:
            yield Issue(
                "model.containers",
                f"{n} container(s)",
                f"multi-container needs 2 to {MAX_CONTAINERS} containers",
            )
        if cfg.model.inference_mode is None:
            yield Issue(
                "model.inference_mode",
                None,
                "multi-container needs inference_mode: serial (pipeline) or direct",
            )
    else:
        # Inference components run one container each; shadow variants bring their own (component_rules).
        shadows = {s.container for s in cfg.endpoint.shadow_variants}
        n = len([c for c in cfg.model.containers if c.name not in shadows])
        if n != 1 and cfg.endpoint.type != "inference-components":
            yield Issue(
                "model.containers",
                f"{n} containers",
                f"endpoint.type {cfg.endpoint.type} takes exactly one container; "
                "use endpoint.type: multi-container for 2-15",
            )
        if cfg.model.inference_mode is not None:
            yield Issue(
                "model.inference_mode",
                cfg.model.inference_mode,
                "only multi-container endpoints take inference_mode; remove it",
            )


def unique_names(cfg: DeploymentConfig) -> Iterable[Issue]:
    for what, names in (
        ("model.containers", [c.name for c in cfg.model.containers]),
        ("endpoint.variants", [v.name for v in cfg.endpoint.variants]),
    ):
        for name, count in Counter(names).items():
            if count > 1:
                yield Issue(f"{what}[].name", name, f"names must be unique; {name!r} appears {count} times")


def direct_hostnames(cfg: DeploymentConfig) -> Iterable[Issue]:
    """Direct mode: every container has a unique hostname. A serial pipeline: hostnames on every container or
    on none (row container-hostname-all)."""
    if cfg.model.inference_mode != "direct":
        named = [c.hostname is not None for c in cfg.model.containers]
        if any(named) and not all(named):
            i = named.index(False)
            yield Issue(
                f"model.containers[{i}].hostname",
                None,
                f'"{HOSTNAME_SENTENCE}": set e.g. hostname: {cfg.model.containers[i].name} on it, or remove '
                "hostname from every container",
            )
        return
    hostnames = []
    for i, c in enumerate(cfg.model.containers):
        if c.hostname is None:
            yield Issue(
                f"model.containers[{i}].hostname",
                None,
                f"direct mode routes by TargetContainerHostname; set e.g. hostname: {c.name}",
            )
        else:
            hostnames.append(c.hostname)
    for name, count in Counter(hostnames).items():
        if count > 1:
            yield Issue("model.containers[].hostname", name, "hostnames must be unique in direct mode")


def multi_model_data(cfg: DeploymentConfig) -> Iterable[Issue]:
    mme = cfg.endpoint.type == "multi-model"
    for i, c in enumerate(cfg.model.containers):
        path = f"model.containers[{i}].model_data"
        if mme and c.model_data.source not in ("multi-model", "s3"):
            yield Issue(
                f"{path}.source",
                c.model_data.source,
                "a multi-model endpoint needs source: multi-model (a folder of *.tar.gz) or source: s3 "
                "(uri: the S3 prefix holding them)",
            )
        if not mme and c.model_data.source == "multi-model":
            yield Issue(
                f"{path}.source", "multi-model", "source multi-model needs endpoint.type: multi-model"
            )
        if c.model_data.cache is not None and not mme:
            yield Issue(
                f"{path}.cache",
                c.model_data.cache,
                "cache applies only to source: multi-model (or source: s3 on a multi-model endpoint)",
            )
        if c.model_data.models is not None and c.model_data.source != "multi-model":
            yield Issue(
                f"{path}.models",
                list(c.model_data.models),
                "models lists the model_code folders of a local multi-model set: only with source: multi-model",
            )
        for j, name in enumerate(c.model_data.models or ()):
            if not SET_MEMBER.match(name):
                yield Issue(
                    f"{path}.models[{j}]",
                    name,
                    "a model_code/NAME folder's name (letters, digits, - and _), archived as NAME.tar.gz: e.g. "
                    f"{name.removesuffix('.tar.gz').replace('.', '-') or 'churn'}",
                )


def local_paths(cfg: DeploymentConfig) -> Iterable[Issue]:
    """Paths of local files hold no NUL byte: no file system can name one (the path could not be resolved)."""
    named: list[tuple[str, Any]] = [
        (f"model.containers[{i}].model_data.path", c.model_data.path)
        for i, c in enumerate(cfg.model.containers)
    ]
    named.extend(
        (f"model.containers[{i}].additional_model_data[{j}].path", ch.path)
        for i, c in enumerate(cfg.model.containers)
        for j, ch in enumerate(c.additional_model_data)
    )
    images = [
        ("image", cfg.image),
        *((f"model.containers[{i}].image", c.image) for i, c in enumerate(cfg.model.containers)),
    ]
    for where, img in images:
        named.extend((f"{where}.{key}", getattr(img, key, None)) for key in ("context", "requirements"))
    for path, value in named:
        if isinstance(value, str) and "\x00" in value:
            yield Issue(
                path, value, "a file path cannot hold a NUL byte (\\x00); name the file or folder as on disk"
            )


def type_sections(cfg: DeploymentConfig) -> Iterable[Issue]:
    ep = cfg.endpoint
    if ep.type == "serverless":
        if ep.serverless is None:
            yield Issue(
                "endpoint.serverless",
                None,
                "serverless needs a serverless section, e.g. {memory_size_mb: 2048, max_concurrency: 20}",
            )
        if ep.variants:
            yield Issue(
                "endpoint.variants",
                [v.name for v in ep.variants],
                "serverless has exactly one variant, configured under endpoint.serverless; remove variants",
            )
    else:
        if ep.serverless is not None:
            yield Issue("endpoint.serverless", "set", f"only serverless endpoints take it, not {ep.type}")
        if not ep.variants:
            yield Issue(
                "endpoint.variants",
                [],
                f"{ep.type} needs at least one variant, e.g. {{name: main, instance_type: ml.m5.large}}",
            )
    if ep.type == "async" and ep.async_ is None:
        yield Issue(
            "endpoint.async", None, "async needs an async section (output_prefix, failure_prefix, ...)"
        )
    if ep.type != "async" and ep.async_ is not None:
        yield Issue("endpoint.async", "set", f"only async endpoints take it, not {ep.type}")


def serverless_limits(cfg: DeploymentConfig) -> Iterable[Issue]:
    """Serverless: no VPC, data capture, network isolation; provisioned <= max (docs/serverless-async.md)."""
    if cfg.endpoint.type != "serverless":
        return
    if cfg.security.vpc is not None:
        yield Issue("security.vpc", "set", "serverless endpoints cannot run in a VPC; remove it")
    if cfg.endpoint.data_capture is not None and cfg.endpoint.data_capture.enabled:
        yield Issue("endpoint.data_capture.enabled", True, "serverless endpoints do not support data capture")
    if cfg.model.network_isolation:
        yield Issue("model.network_isolation", True, "serverless endpoints do not support network isolation")
    s = cfg.endpoint.serverless
    if s is None:
        return
    if s.provisioned_concurrency is not None and s.provisioned_concurrency > s.max_concurrency:
        yield Issue(
            "endpoint.serverless.provisioned_concurrency",
            s.provisioned_concurrency,
            f"must be <= max_concurrency ({s.max_concurrency})",
        )
    if s.autoscaling is not None:
        a = s.autoscaling
        if s.provisioned_concurrency is None:
            yield Issue(
                "endpoint.serverless.autoscaling",
                "set",
                "scales provisioned concurrency; set provisioned_concurrency too",
            )
        elif not a.min_capacity <= s.provisioned_concurrency <= a.max_capacity:
            yield Issue(
                "endpoint.serverless.provisioned_concurrency",
                s.provisioned_concurrency,
                f"must lie between autoscaling min_capacity ({a.min_capacity}) and max_capacity ({a.max_capacity})",
            )
        if a.max_capacity > s.max_concurrency:
            yield Issue(
                "endpoint.serverless.autoscaling.max_capacity",
                a.max_capacity,
                f"must be <= max_concurrency ({s.max_concurrency})",
            )


def variant_autoscaling(cfg: DeploymentConfig) -> Iterable[Issue]:
    is_async = cfg.endpoint.type == "async"
    for variant_path, v in variant_paths(cfg):
        a = v.autoscaling
        if a is None:
            continue
        path = f"{variant_path}.autoscaling"
        if a.min_capacity == 0 and not is_async:
            yield Issue(f"{path}.min_capacity", 0, "only async endpoints can scale to zero; use >= 1")
        if not a.min_capacity <= a.max_capacity:
            yield Issue(f"{path}.max_capacity", a.max_capacity, f"must be >= min_capacity ({a.min_capacity})")
        if not a.min_capacity <= v.initial_instance_count <= a.max_capacity:
            yield Issue(
                f"{variant_path}.initial_instance_count",
                v.initial_instance_count,
                f"must lie between autoscaling min_capacity ({a.min_capacity}) and max_capacity ({a.max_capacity})",
            )
        targets = [
            t for t in (a.target_invocations_per_instance, a.target_backlog_per_instance) if t is not None
        ]
        if len(targets) != 1:
            yield Issue(
                path,
                "targets",
                "set exactly one of target_invocations_per_instance or target_backlog_per_instance",
            )
        if a.target_backlog_per_instance is not None and not is_async:
            yield Issue(
                f"{path}.target_backlog_per_instance",
                a.target_backlog_per_instance,
                "backlog scaling is for async endpoints; use target_invocations_per_instance",
            )


def deployment_strategy(cfg: DeploymentConfig) -> Iterable[Issue]:
    d = cfg.endpoint.deployment
    needs = {"canary": "canary_size_percent", "linear": "linear_step_percent"}
    for strategy, field in needs.items():
        value = getattr(d, field)
        if d.strategy == strategy and value is None:
            yield Issue(f"endpoint.deployment.{field}", None, f"strategy {strategy} needs {field}")
        if d.strategy != strategy and value is not None:
            yield Issue(
                f"endpoint.deployment.{field}",
                value,
                f"applies only to strategy: {strategy}, not {d.strategy}",
            )


def security(cfg: DeploymentConfig) -> Iterable[Issue]:
    kms = cfg.security.kms
    if kms.create and kms.key_arn:
        yield Issue("security.kms", "create + key_arn", "choose one: create: true or key_arn: <existing key>")
    # The options configure the ECR stack, which a deployment of dlc URIs only does not get (serving_stage).
    if not any(not isinstance(cfg.image_of(c), DlcImage) for c in cfg.model.containers):
        repository = cfg.security.repository
        for field in ("enhanced_scanning", "signing"):
            if getattr(repository, field):
                yield Issue(
                    f"security.repository.{field}",
                    True,
                    "every image is a dlc URI, so there is no ECR repository stack to configure; remove it "
                    "(or build or pull the image with image.source: build or ecr)",
                )


def monitoring(cfg: DeploymentConfig) -> Iterable[Issue]:
    if cfg.monitoring.backlog_age_seconds is not None and cfg.endpoint.type != "async":
        yield Issue(
            "monitoring.backlog_age_seconds",
            cfg.monitoring.backlog_age_seconds,
            "applies only to async endpoints (realtime endpoints publish no backlog metrics)",
        )


def written_prefixes(cfg: DeploymentConfig) -> list[str]:
    """Prefixes of the data bucket this deployment writes (data capture, async input/output/failure, core
    dumps)."""
    out = []
    capture = cfg.endpoint.data_capture
    if capture is not None and capture.enabled and cfg.endpoint.type != "serverless":
        out.append(capture.prefix.strip("/"))
    if cfg.endpoint.type == "async" and cfg.endpoint.async_ is not None:
        a = cfg.endpoint.async_
        out += [ASYNC_INPUT_PREFIX, a.output_prefix.strip("/"), a.failure_prefix.strip("/")]
    if cfg.endpoint.type != "serverless":
        for v in cfg.endpoint.variants:
            if v.core_dumps is not None and v.core_dumps.prefix.strip("/") not in out:
                out.append(v.core_dumps.prefix.strip("/"))
    return out


def storage_lifecycle(cfg: DeploymentConfig) -> Iterable[Issue]:
    """Expiry applies to data prefixes only: model data sets stay for rollbacks to earlier releases."""
    allowed = written_prefixes(cfg)
    for prefix, days in cfg.storage.expire_days.items():
        path = f"storage.expire_days.{prefix}"
        if prefix.strip("/") not in allowed:
            where = ", ".join(allowed) if allowed else "none (no data capture, not async)"
            yield Issue(
                path,
                prefix,
                f"not a prefix this deployment writes; expire one of: {where} "
                "(model data under models/ is kept so that rollbacks find it)",
            )
        if days < 1:
            yield Issue(path, days, "days must be >= 1")


def environments(cfg: DeploymentConfig) -> Iterable[Issue]:
    """ContainerDefinition.Environment: <= 100 entries, 1024 bytes per key and value, 32 KB of keys and values
    per container and per Model (a multi-container endpoint's one Model holds every container) (docs/hosting-
    contract.md); the variables the serving runtime reads hold values it can use
    (:class:`smkit.contract.RuntimeSettings`, the reader the container itself uses)."""
    model_total = 0
    for i, c in enumerate(cfg.model.containers):
        path = f"model.containers[{i}].environment"
        try:
            RuntimeSettings.from_environment(c.environment)
        except SettingError as exc:
            yield Issue(f"{path}.{exc.variable}", exc.value, f"{exc.problem}; {exc.fix}")
        if len(c.environment) > MAX_ENV_ENTRIES:
            yield Issue(path, f"{len(c.environment)} entries", f"at most {MAX_ENV_ENTRIES} entries")
        for key, value in c.environment.items():
            if len(key.encode()) > MAX_ENV_BYTES or len(value.encode()) > MAX_ENV_BYTES:
                yield Issue(
                    f"{path}.{key}",
                    f"{len(value.encode())} bytes",
                    f"keys and values <= {MAX_ENV_BYTES} bytes",
                )
        total = environment_bytes(cfg, i)
        model_total += total
        if total > MAX_ENV_TOTAL_BYTES:
            yield Issue(
                path,
                f"{total} bytes",
                f"AWS: {ENV_COMBINED!r} Move large values into the model data (a file the handler reads) "
                f"({ENV_URL})",
            )
    if cfg.endpoint.type == "multi-container" and model_total > MAX_ENV_TOTAL_BYTES:
        yield Issue(
            "model.containers",
            f"{model_total} bytes",
            f"AWS: {ENV_MODEL_COMBINED!r} The containers of a multi-container endpoint are one Model; move large "
            f"values into the model data ({ENV_URL})",
        )


def environment_bytes(cfg: DeploymentConfig, index: int) -> int:
    """Bytes of the keys and values of the Environment the stacks write for container ``index``: the config's,
    its batching variables and the kit's own (counted at their longest)."""
    # Imported here: smkit.config.resolved reads this module's rules when it is imported.
    from smkit.config.resolved.environment import container_environment

    c = cfg.model.containers[index]
    env = container_environment(
        {**(c.batching.environment() if c.batching else {}), **c.environment},
        endpoint_type=cfg.endpoint.type,
        multi_model=cfg.endpoint.type == "multi-model",
        cache_enabled=False,
    )
    return sum(len(k.encode()) + len(v.encode()) for k, v in env.items())


def batching(cfg: DeploymentConfig) -> Iterable[Issue]:
    """``batching`` is not also written as its variables, and waits no longer than the invocation timeout
    (the serving runtime refuses both at start: smkit/hosting/env.py)."""
    for i, c in enumerate(cfg.model.containers):
        if c.batching is None:
            continue
        path = f"model.containers[{i}]"
        for key in (TS_BATCH_SIZE, TS_MAX_BATCH_DELAY):
            if key in c.environment:
                yield Issue(
                    f"{path}.environment.{key}",
                    c.environment[key],
                    f"set by {path}.batching too; keep one of them (batching is the typed form)",
                )
        try:
            timeout = RuntimeSettings.from_environment(c.environment).invocation_timeout_s
        except SettingError:
            continue  # reported by environments()
        if c.batching.max_batch_delay_ms > timeout * 1000:
            yield Issue(
                f"{path}.batching.max_batch_delay_ms",
                c.batching.max_batch_delay_ms,
                f"over the invocation timeout of {timeout:g} s ({MODEL_SERVER_TIMEOUT_SECONDS}); "
                f"use at most {timeout * 1000:g} (a few ms is usual)",
            )


def pipeline_stages(cfg: DeploymentConfig) -> Iterable[Issue]:
    """Production is a different account or region than staging: the approval gate must protect something."""
    p = cfg.pipeline
    if p is not None and (p.staging.account, p.staging.region) == (p.production.account, p.production.region):
        yield Issue(
            "pipeline.production",
            f"{p.production.account}/{p.production.region}",
            "must differ from pipeline.staging in account or region (e.g. a separate prod account)",
        )


RULES: tuple[Rule, ...] = (
    container_count,
    unique_names,
    direct_hostnames,
    multi_model_data,
    local_paths,
    type_sections,
    serverless_limits,
    variant_autoscaling,
    deployment_strategy,
    security,
    monitoring,
    storage_lifecycle,
    environments,
    batching,
    pipeline_stages,
)
