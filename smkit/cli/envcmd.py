"""``smkit env MODEL_DIR [-- COMMAND...]``: the model's environment, or a command run inside it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import click

from smkit.cli.envopts import env_options, target
from smkit.modelenv import ModelEnvError, model_environment


@click.command("env", context_settings={"ignore_unknown_options": True})
@click.argument("model_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@env_options
def env(model_dir: Path, command: tuple[str, ...], config_path: Path | None, python: str | None) -> None:
    """Build (once) the environment of MODEL_DIR (which holds code/requirements.txt) and print it, or run
    COMMAND in it: a leading `python` is the environment's interpreter, and the model's requirements are on
    PYTHONPATH.

    \b
    smkit env model_code/churn                                  # interpreter and PYTHONPATH
    smkit env model_code/churn --config config/churn.yaml -- python model_code/churn/train.py
    """
    if not (model_dir / "code" / "requirements.txt").is_file():
        raise click.BadParameter(
            f"{model_dir} has no code/requirements.txt; pass the model folder (model_code/NAME)",
            param_hint="MODEL_DIR",
        )
    try:
        environment = model_environment(model_dir, target(config_path).runtime, python=python)
    except ModelEnvError as exc:
        raise click.ClickException(str(exc)) from None
    paths = os.pathsep.join([*environment.extra_paths, *filter(None, [os.environ.get("PYTHONPATH")])])
    if not command:
        click.echo(f"python: {environment.python}")
        click.echo(f"PYTHONPATH: {paths}")
        return
    argv = [environment.python, *command[1:]] if command[0] in ("python", "python3") else list(command)
    variables = {**os.environ, **({"PYTHONPATH": paths} if paths else {})}
    raise SystemExit(subprocess.run(argv, env=variables, check=False).returncode)
