"""What the serving image gives a model, as the resolved deployment decided it (smkit.config.resolved).

The image facts (Python version, framework defaults, CPU or GPU, ``image.requirements``) are read once, by
:mod:`smkit.config.resolved.images`; the model environments and the packager take them from there.
Without a config, a model runs on the kit's own image (:class:`ImageRuntime` with its defaults).
"""

from __future__ import annotations

from smkit.config.resolved import PACKAGE_DISTRIBUTIONS, ImageRuntime, ResolvedDeployment, dlc_runtime

__all__ = ["PACKAGE_DISTRIBUTIONS", "ImageRuntime", "ModelEnvError", "config_runtime", "dlc_runtime"]


class ModelEnvError(RuntimeError):
    """The model's environment cannot be built; the message names the cause and the fix."""


def config_runtime(deployment: ResolvedDeployment, container: str | None = None) -> ImageRuntime:
    """The runtime of ``container`` (by name; default the first) of ``deployment``."""
    chosen = next((c for c in deployment.containers if c.name == container), deployment.containers[0])
    return chosen.image.runtime
