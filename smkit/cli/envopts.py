"""Options and glue shared by the commands that run a user's handler in its own environment.

``--config`` names the deployment config the model is for: its image decides the Python version and the
framework defaults, its ``model.network_isolation`` whether wheels are vendored. ``--python PATH`` runs the
handler with an existing interpreter instead of a built environment.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click

from smkit.cli.shared_options import config_option
from smkit.config import ConfigError, load_deployment
from smkit.config.resolved import ResolvedDeployment
from smkit.modelenv import ImageRuntime
from smkit.ops import package_by_config as model_data
from smkit.ops.package_by_config import ModelDataError, PackageTarget, say
from smkit.packaging import PackagingError

__all__ = ["PackageTarget", "command_errors", "env_options", "environment", "loaded", "say", "target"]

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
    func = config_option(
        "Deployment config the model is for: its image sets the Python version and framework defaults, "
        "its network_isolation turns on wheel vendoring.",
        required=False,
    )(func)
    return func


def loaded(config_path: Path) -> ResolvedDeployment:
    """The deployment of the config at ``config_path``; a config that does not load ends the command with
    its message."""
    try:
        return load_deployment(config_path)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None


def target(config_path: Path | None, output: Path | None = None) -> PackageTarget:
    """:func:`smkit.ops.package_by_config.target`; a config that does not load ends the command."""
    with command_errors():
        return model_data.target(config_path, output)


def environment(
    runtime: ImageRuntime, python: str | None, *, progress: bool = True
) -> Callable[[Path], tuple[str, tuple[str, ...]]]:
    """``model folder -> (interpreter, requirement directories)`` for the packager's handler check
    (:func:`smkit.ops.package_by_config.environment`); an environment that cannot be made ends the command."""
    build = model_data.environment(runtime, python, progress=progress)

    def built(model_dir: Path) -> tuple[str, tuple[str, ...]]:
        with command_errors():
            return build(model_dir)

    return built


@contextlib.contextmanager
def command_errors(*passed: type[Exception]) -> Iterator[None]:
    """Turn what the library refuses (a config, model data, packaging) into the command's error message;
    the exception types in ``passed`` go through as they are."""
    try:
        yield
    except passed:
        raise
    except (ConfigError, ModelDataError, PackagingError) as exc:
        raise click.ClickException(str(exc)) from None
