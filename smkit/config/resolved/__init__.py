"""The resolved deployment: what a config means on SageMaker, decided once, read by every consumer.

:func:`smkit.config.load_config` resolves each config once (:func:`deployment_of` returns that result):
per container the image it runs, its model data (kind, absolute path or S3 URI, compression), multi-model
and cache setting, the full container environment SageMaker passes, network isolation and the
wheel-vendoring decision, the image's framework defaults; per endpoint its variants, instance counts and
payload limit. The stacks (smkit/cdk), the local endpoint (smkit.local), local batch transform, the model
environments (smkit.modelenv) and both packaging paths read it and decide none of it again
(docs/resolved-deployment.md).

It lives inside smkit.config because the loader builds it: a separate part of smkit would import the config
and be imported by it.
"""

from __future__ import annotations

from pathlib import Path

from smkit.config.models import DeploymentConfig
from smkit.config.resolved.deployment import (
    ResolvedComponents,
    ResolvedContainer,
    ResolvedDeployment,
    ResolvedModelData,
    ResolvedScaling,
    ResolvedVariant,
)
from smkit.config.resolved.environment import WorkerCount, container_environment, profile_of, worker_count
from smkit.config.resolved.images import (
    KIT_PYTHON,
    PACKAGE_DISTRIBUTIONS,
    ImageRuntime,
    ResolvedImage,
    dlc_runtime,
)
from smkit.config.resolved.paths import absolute
from smkit.config.resolved.resolve import ResolveError, resolve


def deployment_of(cfg: DeploymentConfig, root: Path | None = None) -> ResolvedDeployment:
    """The resolved deployment of ``cfg`` with its relative paths resolved against ``root``.

    Without ``root``: the one :func:`~smkit.config.load_config` built (against the file's folder), else (a
    config built from data, :func:`~smkit.config.parse_config` without ``base_dir``) resolved now against the
    working directory. With ``root``: the one ``load_config`` built when it was built against ``root``, else
    resolved now against ``root``. Raises :class:`ResolveError` for a config that cannot be resolved."""
    built = cfg._resolved
    if (
        isinstance(built, ResolvedDeployment)
        and built._source is cfg
        and (root is None or root.resolve() == built.base_dir)
    ):
        return built
    return resolve(cfg, root or Path.cwd())


__all__ = [
    "PACKAGE_DISTRIBUTIONS",
    "KIT_PYTHON",
    "ImageRuntime",
    "ResolveError",
    "ResolvedComponents",
    "ResolvedContainer",
    "ResolvedDeployment",
    "ResolvedImage",
    "ResolvedModelData",
    "ResolvedScaling",
    "ResolvedVariant",
    "WorkerCount",
    "absolute",
    "container_environment",
    "deployment_of",
    "dlc_runtime",
    "profile_of",
    "resolve",
    "worker_count",
]
