"""The resolved deployment: what a config means on SageMaker, decided once, read by every consumer.

:func:`smkit.config.load_deployment` loads a config file and resolves it (:func:`resolve`, a pure
function of the validated config and the folder its paths are relative to; nothing is cached): per
container the image it runs, its model data (kind, absolute path or S3 URI, compression), multi-model
and cache setting, the full container environment SageMaker passes, network isolation and the
wheel-vendoring decision, the image's framework defaults; per endpoint its variants, instance counts and
payload limit. The stacks (smkit/cdk), the local endpoint (smkit.local), local batch transform, the model
environments (smkit.modelenv) and both packaging paths read it and decide none of it again
(docs/resolved-deployment.md).

It lives inside smkit.config because the loader builds it: a separate part of smkit would import the config
and be imported by it.
"""

from __future__ import annotations

from smkit.config.resolved.deployment import (
    ResolvedChannel,
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
from smkit.config.resolved.paths import absolute, absolute_paths, with_absolute_paths
from smkit.config.resolved.resolve import ResolveError, resolve

__all__ = [
    "PACKAGE_DISTRIBUTIONS",
    "KIT_PYTHON",
    "ImageRuntime",
    "ResolveError",
    "ResolvedChannel",
    "ResolvedComponents",
    "ResolvedContainer",
    "ResolvedDeployment",
    "ResolvedImage",
    "ResolvedModelData",
    "ResolvedScaling",
    "ResolvedVariant",
    "WorkerCount",
    "absolute",
    "absolute_paths",
    "container_environment",
    "dlc_runtime",
    "profile_of",
    "resolve",
    "with_absolute_paths",
    "worker_count",
]
