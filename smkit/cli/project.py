"""Commands on a project folder made by ``smkit init``: train, package by config, synth and deploy.

``smkit package --config``, ``smkit synth``, ``smkit deploy`` and ``smkit local-endpoint`` build every
archive of the config that is missing or older than its ``model_code`` sources (smkit.project), saying
which file changed, so a stale model never ships. ``smkit synth`` runs the kit's CDK app
(``python -m smkit.cdk.app``) offline; ``smkit deploy`` hands the same app to the pinned AWS CDK CLI
(smkit.ops.cdk_cli).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from smkit.cli.envopts import loaded, say, target
from smkit.cli.package import package_config
from smkit.cli.shared_options import config_option
from smkit.config import ConfigError
from smkit.config.resolved import ResolvedDeployment
from smkit.config.resolved.names import deployed_names
from smkit.ops.cdk_cli import APP_MODULE, CDK_CLI_VERSION, CdkCli, CdkError, CdkResult
from smkit.ops.deploy_pipeline import DeployPlan, DeployTarget, run_deploy

# Docker builds of image assets without BuildKit's provenance attestation: with it the push is an OCI image
# index, which SageMaker CreateModel rejects ("Unsupported manifest media type").
NO_ATTESTATIONS = {"BUILDX_NO_DEFAULT_ATTESTATIONS": "1"}


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
@config_option("Deployment config to synthesize.")
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
    config = loaded(config_path)
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
    # The names `smkit deploy` gives (the local endpoint's banner says the same): the serving stack's.
    for line in deployed_names(loaded(config_path)).lines():
        click.echo(f"deployed as {line}")


@click.command("deploy", context_settings={"ignore_unknown_options": True})
@config_option("Deployment config to deploy.")
@_assembly_options
@click.argument("cdk_args", nargs=-1, type=click.UNPROCESSED)
def deploy(config_path: Path, output: Path, context: tuple[str, ...], cdk_args: tuple[str, ...]) -> None:
    """cdk deploy --all of the config with the pinned AWS CDK CLI, into the account of your credentials.

    Runs `npx --yes aws-cdk@PINNED deploy --all --app "python -m smkit.cdk.app" -c config=CONFIG
    --require-approval broadening [CDK_ARGS]` (the project's node_modules/.bin/cdk instead of npx when
    `npm ci` installed it); needs Node.js (npx), AWS credentials, a bootstrapped
    account (`npx aws-cdk@PINNED bootstrap`) and Docker for a `build` image. Archives older than their
    model_code/ sources are packaged again first.
    """
    env = {**os.environ, **NO_ATTESTATIONS}
    env.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    app = f"{sys.executable} -m {APP_MODULE}"
    cli = CdkCli(root=Path.cwd(), env=env, stream=True, app=app, notices=True, interactive=True, echo=say)
    values = _context(config_path, context)
    plan = DeployPlan(
        config=Path(values.pop("config")),
        assembly=output,
        context=[f"{key}={value}" for key, value in values.items()],
        extra=cdk_args,
    )
    try:
        run_deploy(plan, AccountTarget(cli, config_path))
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    except CdkError as exc:
        if exc.returncode is None:  # the CLI could not be run at all
            raise click.ClickException(str(exc)) from None
        raise SystemExit(exc.returncode) from None


class AccountTarget(DeployTarget[None]):
    """``smkit deploy``: the account of your credentials, from your terminal. Stale model data is packaged
    first; the CLI asks before it broadens IAM permissions and waits for CloudFormation itself."""

    def __init__(self, cli: CdkCli, config_path: Path) -> None:
        super().__init__(cli)
        self.config_path = config_path

    def package(self, plan: DeployPlan) -> None:
        ensure_archives(self.config_path)
        say(f"AWS CDK CLI {CDK_CLI_VERSION}, from {shlex.join(self.cli.command)}")

    def finish(self, deployment: ResolvedDeployment, plan: DeployPlan, deployed: CdkResult) -> None:
        return None
