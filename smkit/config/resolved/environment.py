"""The environment SageMaker passes to a container (``ContainerDefinition.Environment``), decided once.

The stacks write exactly this into the Model; the local endpoint starts the container with exactly this,
plus the variables the platform itself provides and the local stand-ins listed in
:data:`smkit.local.containers.LOCAL_ONLY`. Besides the config's own ``environment``:

- ``SMKIT_PROFILE`` (every container but an LLM engine's, which reads none of the kit's variables): ``realtime``, ``serverless`` or ``async`` from ``endpoint.type``;
  the serving runtime picks its request payload limit from it (6 MiB, 4 MiB, 1 GiB: async requests are
  read from S3, https://docs.aws.amazon.com/sagemaker/latest/dg/async-inference.html). Without it the
  image on an async endpoint would answer 413 to bodies SageMaker accepts.
- ``SMKIT_MODEL_CACHE_SETTING`` (multi-model containers): ``MultiModelConfig.ModelCacheSetting``, so the
  runtime unloads a model after every call when caching is disabled, as SageMaker does
  (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_MultiModelConfig.html).
- ``SMKIT_METRICS_PATH`` (the container of an inference component with ``metrics_path``): the runtime serves
  its Prometheus metrics where the component's ContainerMetricsConfig tells SageMaker to scrape them.

The worker count: ``SAGEMAKER_MODEL_SERVER_WORKERS`` when the config sets it; otherwise the image runs one
worker per vCPU of the instance (:func:`worker_count` says how many a local run of a variant uses).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from smkit.contract import MODEL_SERVER_WORKERS, SMKIT_METRICS_PATH, SMKIT_MODEL_CACHE_SETTING, SMKIT_PROFILE

# endpoint.type -> the serving runtime's profile (smkit/hosting/env.py); every other type is realtime.
PROFILES = {"serverless": "serverless", "async": "async"}


def profile_of(endpoint_type: str) -> str:
    """The serving profile of an endpoint type."""
    return PROFILES.get(endpoint_type, "realtime")


def container_environment(
    written: Mapping[str, str],
    *,
    endpoint_type: str,
    multi_model: bool,
    cache_enabled: bool,
    metrics_path: str | None = None,
    serving_runtime: bool = True,
) -> dict[str, str]:
    """The full Environment of one container: the config's ``written`` variables, then the kit's.

    ``serving_runtime``: False for an LLM engine's image (vLLM, LMI), whose server reads none of the kit's
    variables: its Environment is the config's alone.
    """
    env = dict(written)
    if not serving_runtime:
        return env
    env.setdefault(SMKIT_PROFILE, profile_of(endpoint_type))
    if metrics_path is not None:
        env.setdefault(SMKIT_METRICS_PATH, metrics_path)
    if multi_model:
        env.setdefault(SMKIT_MODEL_CACHE_SETTING, "Enabled" if cache_enabled else "Disabled")
    return env


@dataclass(frozen=True)
class WorkerCount:
    """How many model workers a container runs, and why (for the log)."""

    count: int
    reason: str


def configured_workers(environment: Mapping[str, str]) -> int | None:
    """``SAGEMAKER_MODEL_SERVER_WORKERS`` of a container's environment (validated by the config rules)."""
    raw = environment.get(MODEL_SERVER_WORKERS, "").strip()
    return int(raw) if raw else None


def worker_count(
    environment: Mapping[str, str], *, instance_type: str | None, vcpus: int | None, local_cpus: int
) -> WorkerCount:
    """The workers a local run starts for a container on a variant of ``instance_type``.

    The config's ``SAGEMAKER_MODEL_SERVER_WORKERS`` wins, as on AWS. Otherwise the image runs one worker per
    vCPU of the instance; locally that is the instance type's vCPUs capped by this machine's CPUs (more
    workers than CPUs only compete for them), or this machine's CPUs when the vCPUs are unknown (serverless,
    an instance family not in the table).
    """
    configured = configured_workers(environment)
    if configured is not None:
        return WorkerCount(configured, f"{MODEL_SERVER_WORKERS}={configured} in the config")
    if vcpus is None:
        what = f"{instance_type}'s vCPUs are not known" if instance_type else "serverless: no instance type"
        return WorkerCount(local_cpus, f"one per local CPU ({what})")
    count = max(1, min(vcpus, local_cpus))
    capped = f", capped by {local_cpus} local CPUs" if vcpus > local_cpus else ""
    return WorkerCount(count, f"one per vCPU of {instance_type} ({vcpus}{capped})")
