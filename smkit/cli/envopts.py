"""Options and glue shared by the commands that run a user's handler in its own environment.

``--config`` names the deployment config the model is for: its image decides the Python version and the
framework defaults, its ``model.network_isolation`` whether wheels are vendored. ``--python PATH`` runs the
handler with an existing interpreter instead of a built environment.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import click

from smkit.config import ConfigError, load_deployment
from smkit.config.resolved import ResolvedDeployment
from smkit.config.security import Artifacts
from smkit.modelenv import ImageRuntime, ModelEnvError, model_environment

# Imported by `smkit serve` only for its options; the serving image never reaches the functions below.

F = TypeVar("F", bound=Callable[..., Any])


def env_options(func: F) -> F:
    """``--config`` and ``--python``."""
    func = click.option(
        "--python",
        "python",
        type=click.Path(exists=True, dir_okay=False),
        help="Run the handler with this interpreter (it must have the model's requirements) instead of "
        "the environment smkit builds from code/requirements.txt.",
    )(func)
    func = click.option(
        "--config",
        "config_path",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="Deployment config the model is for: its image sets the Python version and framework defaults, "
        "its network_isolation turns on wheel vendoring.",
    )(func)
    return func


@dataclass(frozen=True)
class PackageTarget:
    """What the command learned from ``--config`` (defaults: the kit's image, network isolation on).

    ``vendor_wheels``, ``defaults`` (the default handlers the container applies) and ``container_env`` (its
    environment, ``HF_TASK`` included) come from the resolved container
    (:class:`smkit.config.resolved.ResolvedContainer`)."""

    runtime: ImageRuntime
    network_isolation: bool = True
    vendor_wheels: bool = True
    artifacts: Artifacts | None = None  # None: no --config
    defaults: str | None = None
    container_env: Mapping[str, str] = field(default_factory=dict)


def loaded(config_path: Path) -> ResolvedDeployment:
    """The deployment of the config at ``config_path``; a config that does not load ends the command with
    its message."""
    try:
        return load_deployment(config_path)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None


def target(config_path: Path | None, output: Path | None = None) -> PackageTarget:
    """The resolved container whose model data is ``output`` (else the first container) of the config."""
    if config_path is None:
        return PackageTarget(ImageRuntime())
    deployment = loaded(config_path)
    found = deployment.container_for_data(output) if output is not None else None
    container = found or deployment.containers[0]
    return PackageTarget(
        container.image.runtime,
        container.network_isolation,
        container.vendor_wheels,
        deployment.artifacts,
        container.defaults,
        dict(container.environment),
    )


def environment(
    runtime: ImageRuntime, python: str | None, *, progress: bool = True
) -> Callable[[Path], tuple[str, tuple[str, ...]]]:
    """``model folder -> (interpreter, requirement directories)`` for the packager's handler check."""

    def build(model_dir: Path) -> tuple[str, tuple[str, ...]]:
        try:
            env = model_environment(model_dir, runtime, python=python, progress=progress)
        except ModelEnvError as exc:
            raise click.ClickException(f"the model's environment: {exc}") from None
        return env.python, env.extra_paths

    return build


def say(message: str) -> None:
    """A progress or advice line on stderr."""
    print(f"smkit: {message}", file=sys.stderr, flush=True)
