"""Commands on a project folder made by ``smkit init``: train, package by config, synth and deploy.

``smkit package --config``, ``smkit synth``, ``smkit deploy`` and ``smkit local-endpoint`` build every
archive of the config that is missing or older than its ``model_code`` sources (smkit.project), saying
which file changed, so a stale model never ships. ``smkit synth`` runs the kit's CDK app
(``python -m smkit.cdk.app``) offline; ``smkit deploy`` hands the same app to the pinned AWS CDK CLI
(smkit.cdkcli).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import click

from smkit.cdkcli import APP_MODULE, CDK_CLI_VERSION, CdkCliError, cli_command
from smkit.cli.envopts import say, target
from smkit.config import ConfigError, DeploymentConfig, load_config
from smkit.packaging import PackagingError
from smkit.packaging.report import size_report
from smkit.project import ProjectModel, project_models

CONFIG = click.Path(exists=True, dir_okay=False, path_type=Path)
# Docker builds of image assets without BuildKit's provenance attestation: with it the push is an OCI image
# index, which SageMaker CreateModel rejects ("Unsupported manifest media type").
NO_ATTESTATIONS = {"BUILDX_NO_DEFAULT_ATTESTATIONS": "1"}


def _load(config_path: Path) -> DeploymentConfig:
    try:
        return load_config(config_path)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None


def _data_path(model: ProjectModel) -> Path:
    """The config's ``model_data.path`` the model comes from (a multi-model member: its set's folder)."""
    return model.archive.parent if model.kind == "member" else model.archive


def _settings(config_path: Path, model: ProjectModel) -> dict[str, object]:
    goal = target(config_path, _data_path(model))
    return {
        "image": goal.runtime.label,
        "python": goal.runtime.python,
        "network_isolation": goal.network_isolation,
        "smkit": version("smkit"),
    }


def package_config(
    config_path: Path, *, force: bool = False, python: str | None = None, implicit: bool = False
) -> list[Path]:
    """Build each piece of model data of the config that comes from ``model_code/`` and is missing or
    stale (archives, uncompressed prefixes, the archives of multi-model sets), saying what it did.

    ``implicit`` (before synth, deploy or a local endpoint): a stale multi-model archive that smkit did not
    build (no record of its inputs) is refused, naming it, instead of being rebuilt from ``model_code``.
    """
    from smkit.cli.package import BuildOptions, build_for
    from smkit.project import multi_model_sets

    config = _load(config_path)
    models = project_models(config)
    for folder in multi_model_sets(config):
        if not any(m.kind == "member" and m.archive.parent == folder for m in models):
            say(
                f"{folder}: multi-model set with no NAME.tar.gz of a model_code/NAME folder; add a model with "
                f"smkit package --code model_code/NAME/code --artifacts model_code/NAME/artifacts "
                f"--output {folder}/NAME.tar.gz --config {config_path}"
            )
    if not models and not multi_model_sets(config):
        say(
            f"{config_path}: no model_data.path of the form build/NAME/model.tar.gz (archive) or "
            "build/NAME/model (prefix) beside a model_code/NAME"
        )
    built = []
    for model in models:
        settings = _settings(config_path, model)
        reason = "--force" if force else model.stale(settings)
        what = {"archive": "archive", "prefix": "uncompressed prefix", "member": "multi-model archive"}[
            model.kind
        ]
        if reason is None:
            say(f"{what} {model.archive} is up to date with {model.model_dir}")
            continue
        if implicit and model.kind == "member" and not model.stamp.is_file():
            raise click.ClickException(
                f"multi-model archive {model.archive} is stale ({reason}) and was not built by smkit package "
                f"--config; package it again: smkit package --config {config_path} (rebuilds it from "
                f"{model.model_dir}), or the command that built it"
            )
        say(f"packaging {model.model_dir} -> {what} {model.archive} ({reason})")
        prefix = model.kind == "prefix"
        try:
            manifest = build_for(
                target(config_path, _data_path(model)),
                model.model_dir / "code",
                model.model_dir / "artifacts",
                None if prefix else model.archive,
                BuildOptions(python=python, uncompressed=model.archive if prefix else None),
            )
        except PackagingError as error:
            raise click.ClickException(str(error)) from None
        model.record(settings)
        click.echo(manifest.summary())
        click.echo("\n".join(size_report(manifest)))
        built.append(model.archive)
    return built


def ensure_archives(config_path: Path) -> None:
    """Rebuild the config's stale model data before synth, deploy or a local endpoint uses it."""
    package_config(config_path, implicit=True)


@click.command("train", context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Project folder holding model_code/NAME and config/NAME.yaml.",
)
def train(name: str, args: tuple[str, ...], root: Path) -> None:
    """Run model_code/NAME/train.py in the model's environment (writes artifacts/ and samples/).

    \\b
    smkit train churn                        # fit the example model and write its samples
    smkit train churn --samples-only --rows my_rows.csv
    """
    from smkit.modelenv import ModelEnvError, model_environment

    model_dir = root / "model_code" / name
    script = model_dir / "train.py"
    if not script.is_file():
        raise click.ClickException(f"{script} does not exist; create the model with `smkit init {name}`")
    config = root / "config" / f"{name}.yaml"
    goal = target(config if config.is_file() else None)
    try:
        env = model_environment(model_dir, goal.runtime)
    except ModelEnvError as exc:
        raise click.ClickException(f"the model's environment: {exc}") from None
    paths = os.pathsep.join([*env.extra_paths, *filter(None, [os.environ.get("PYTHONPATH")])])
    variables = {**os.environ, **({"PYTHONPATH": paths} if paths else {})}
    argv = [env.python, str(script), *(_absolute(a) for a in args)]
    raise SystemExit(subprocess.run(argv, env=variables, check=False).returncode)


def _absolute(arg: str) -> str:
    """A path argument that exists is passed absolute (train.py may change directory)."""
    return str(Path(arg).resolve()) if not arg.startswith("-") and Path(arg).exists() else arg


def _context(config_path: Path, context: tuple[str, ...]) -> dict[str, str]:
    """The app's context: the config file (absolute) and each ``-c KEY=VALUE``."""
    values: dict[str, str] = {"config": str(config_path.resolve())}
    for item in context:
        key, eq, value = item.partition("=")
        if not eq:
            raise click.BadParameter(f"{item!r}: give KEY=VALUE", param_hint="--context")
        values[key] = value
    return values


def _app_environment(config_path: Path, outdir: Path, context: tuple[str, ...]) -> dict[str, str]:
    """What the CDK CLI gives an app it runs: the context as JSON and the output directory."""
    env = {**os.environ, "CDK_CONTEXT_JSON": json.dumps(_context(config_path, context))}
    env.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    env["CDK_OUTDIR"] = str(outdir.resolve())
    return env


def _assembly_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options of the commands that run the CDK app: ``-o/--output`` and ``-c/--context``."""
    command = click.option(
        "-c", "--context", multiple=True, help="CDK context KEY=VALUE (e.g. image_tag=TAG); repeatable."
    )(command)
    return click.option(
        "-o",
        "--output",
        type=click.Path(file_okay=False, path_type=Path),
        default=Path("cdk.out"),
        show_default=True,
        help="Cloud assembly directory.",
    )(command)


@click.command("synth")
@click.option("--config", "config_path", type=CONFIG, required=True, help="Deployment config to synthesize.")
@_assembly_options
@click.option(
    "--read-stages",
    is_flag=True,
    help="With -c pipeline=true (the pipeline's synth step): read what each stage runs now (its endpoint, its "
    "recorded releases) through the stage's CDK lookup role, and synthesize again with it, so each stage's "
    "update is planned as smkit deploy plans it. Needs credentials that may assume those roles.",
)
def synth(config_path: Path, output: Path, context: tuple[str, ...], read_stages: bool) -> None:
    """Synthesize the config's stacks offline (no AWS credentials but with --read-stages), with cdk-nag and
    template checks.

    Archives older than their model_code/ sources are packaged again first.
    """
    if read_stages and _context(config_path, context).get("pipeline", "").lower() != "true":
        raise click.UsageError("--read-stages reads the pipeline's stages: add -c pipeline=true")
    config = _load(config_path)
    for notice in config.notices:
        say(f"note: {notice}")
    ensure_archives(config_path)
    env = _app_environment(config_path, output, context)
    result = subprocess.run([sys.executable, "-m", APP_MODULE], env=env, check=False)
    if result.returncode != 0:
        raise SystemExit(result.returncode)
    if read_stages:
        from smkit.release.stage_state import pipeline_context

        extra = pipeline_context(output, config.name)
        for line in extra:
            say(f"read from the stages: {line.split('=', 1)[0]}")
        if extra:
            env = _app_environment(config_path, output, (*context, *extra))
            result = subprocess.run([sys.executable, "-m", APP_MODULE], env=env, check=False)
            if result.returncode != 0:
                raise SystemExit(result.returncode)
    templates = sorted(output.glob("*.template.json"))
    for template in templates:
        click.echo(f"synthesized {template}")


@click.command("deploy", context_settings={"ignore_unknown_options": True})
@click.option("--config", "config_path", type=CONFIG, required=True, help="Deployment config to deploy.")
@_assembly_options
@click.argument("cdk_args", nargs=-1, type=click.UNPROCESSED)
def deploy(config_path: Path, output: Path, context: tuple[str, ...], cdk_args: tuple[str, ...]) -> None:
    """cdk deploy --all of the config with the pinned AWS CDK CLI, into the account of your credentials.

    Runs `npx --yes aws-cdk@PINNED deploy --all --app "python -m smkit.cdk.app" -c config=CONFIG
    --require-approval broadening [CDK_ARGS]`; needs Node.js (npx), AWS credentials, a bootstrapped
    account (`npx aws-cdk@PINNED bootstrap`) and Docker for a `build` image. Archives older than their
    model_code/ sources are packaged again first.
    """
    _load(config_path)
    ensure_archives(config_path)
    try:
        command = cli_command()
    except CdkCliError as exc:
        raise click.ClickException(str(exc)) from None
    app = f"{sys.executable} -m {APP_MODULE}"
    argv = [*command, "deploy", "--all", "--app", app, "--output", str(output)]
    for key, value in _context(config_path, context).items():
        argv += ["-c", f"{key}={value}"]
    argv += ["--require-approval", "broadening", *cdk_args]
    env = {**os.environ, **NO_ATTESTATIONS}
    env.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    say(f"aws-cdk@{CDK_CLI_VERSION}: {' '.join(argv[1:])}")
    raise SystemExit(subprocess.run(argv, env=env, check=False).returncode)
