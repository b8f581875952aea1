"""``smkit emulator ...``: moto's server in the background and the real CDK CLI deploying into it.

Thin wrappers over :mod:`smkit.emulator`. The running server is recorded in ``.smkit/emulator/moto.json``
under the project root (the folder of cdk.json: this repository or a project made by ``smkit init``; else the
working directory); cloud assemblies and derived configs go to ``.smkit/emulator/``. Deploys run the kit's
app (``python -m smkit.cdk.app``) with the pinned CDK CLI, as ``smkit deploy`` does.

    smkit emulator start                          # moto on a free localhost port, in the background
    eval "$(smkit emulator env)"                  # point boto3 / the AWS CLI at it
    smkit emulator deploy -c config/realtime.yaml # start if needed, cdk bootstrap + deploy --all
    smkit emulator destroy                        # cdk destroy every app deployed from here
    smkit emulator stop

Exit codes: 0 success, 1 the emulator, the CDK CLI or a check failed (message on stderr), 2 usage.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from smkit.config import load_deployment
from smkit.emulator import (
    CdkCli,
    CdkError,
    DeployMismatch,
    EmulatorError,
    MotoServer,
    child_environment,
    deploy_config,
    destroy_config,
    emulator_cli,
    ensure_bootstrapped,
    live_stacks,
    repo_root_from,
    sagemaker_resources,
)
from smkit.emulator.client_env import export_lines
from smkit.ops.cdk_cli import APP_MODULE

STATE_DIR = Path(".smkit") / "emulator"
STATE_FILE = "moto.json"
LOG_FILE = "moto.log"
CROSS_STACK_EXPORT = "ExportsOutput"  # CDK's own outputs for cross-stack references: not for people


def _project_root() -> Path:
    """The folder of the project's cdk.json, else the working directory."""
    try:
        return repo_root_from()
    except CdkError:
        return Path.cwd()


def _workdir() -> Path:
    state_dir = click.get_current_context().obj
    return state_dir if isinstance(state_dir, Path) else _project_root() / STATE_DIR


def _cli(server: MotoServer) -> CdkCli:
    """The pinned CDK CLI pointed at ``server``, running the kit's app with this Python (as smkit deploy)."""
    return emulator_cli(
        _project_root(),
        child_environment(server.endpoint_url),
        stream=True,
        app=f"{sys.executable} -m {APP_MODULE}",
    )


F = TypeVar("F", bound=Callable[..., Any])


def _configs_option(help_: str, default: list[Path] | None = None) -> Callable[[F], F]:
    """``-c/--config``, repeatable: the deployment configs a command works on."""
    return click.option(
        "-c",
        "--config",
        "configs",
        type=click.Path(path_type=Path, dir_okay=False, exists=True),
        multiple=True,
        default=default,
        show_default=default is not None,
        help=help_,
    )


@contextmanager
def _errors() -> Iterator[None]:
    try:
        yield
    except (EmulatorError, CdkError, DeployMismatch, FileNotFoundError, ValueError) as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(1) from None


def _running(workdir: Path) -> MotoServer | None:
    return MotoServer.attach(workdir / STATE_FILE)


def _running_or_say(workdir: Path, meaning: str = "") -> MotoServer | None:
    """The background server; None after saying on stderr that none runs (and ``meaning``: what that means)."""
    server = _running(workdir)
    if server is None:
        click.echo(f"no emulator is running{meaning}", err=True)
    return server


def _ensure_running(workdir: Path, port: int | None) -> MotoServer:
    server = _running(workdir)
    if server is not None:
        return server
    server = MotoServer.start(port=port, log_path=workdir / LOG_FILE, detach=True)
    server.save(workdir / STATE_FILE)
    click.echo(
        f"started moto on {server.endpoint_url} (pid {server.pid}, log {workdir / LOG_FILE})", err=True
    )
    return server


def _require_running(workdir: Path) -> MotoServer:
    server = _running(workdir)
    if server is None:
        raise EmulatorError("no emulator is running; start one with `smkit emulator start`")
    return server


@click.group()
@click.option(
    "--state-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where the server record, log and cloud assemblies live [default: .smkit/emulator].",
)
@click.pass_context
def emulator(ctx: click.Context, state_dir: Path | None) -> None:
    """Emulated AWS (moto's server) and the real CDK CLI deploying into it."""
    ctx.obj = state_dir.resolve() if state_dir is not None else None


@emulator.command()
@click.option("--port", type=click.IntRange(1, 65535), help="Port on 127.0.0.1 [default: a free one].")
def start(port: int | None) -> None:
    """Start moto's server in the background (or report the one already running)."""
    with _errors():
        workdir = _workdir()
        server = _running(workdir)
        if server is None:
            server = _ensure_running(workdir, port)
        click.echo(server.endpoint_url)


@emulator.command()
def stop() -> None:
    """Stop the background server: its whole process group, and wait until its port is free."""
    with _errors():
        workdir = _workdir()
        server = _running_or_say(workdir)
        if server is None:
            return
        server.stop()
        (workdir / STATE_FILE).unlink(missing_ok=True)
        click.echo(f"stopped moto on {server.endpoint_url}", err=True)


@emulator.command()
def status() -> None:
    """Print the endpoint, live stacks and SageMaker resources as JSON (exit 1 when not running)."""
    with _errors():
        server = _require_running(_workdir())
        report = {
            "endpoint_url": server.endpoint_url,
            "pid": server.pid,
            "region": server.region,
            "stacks": live_stacks(server.client("cloudformation")),
            "sagemaker": sagemaker_resources(server.client("sagemaker")),
        }
        click.echo(json.dumps(report, indent=2))


@emulator.command()
@click.option("--alarm", "names", multiple=True, help="Alarm name; repeat for several [default: every one].")
def alarms(names: tuple[str, ...]) -> None:
    """Evaluate the emulator's CloudWatch alarms once (moto never does) and print each one's state as JSON."""
    from smkit.emulator.alarms import evaluate_alarms

    with _errors():
        server = _require_running(_workdir())
        results = evaluate_alarms(server.client("cloudwatch"), names=names or None)
        click.echo(json.dumps([dataclasses.asdict(r) for r in results], indent=2))


@emulator.command()
def env() -> None:
    """Print ``export`` lines for the running server: ``eval "$(smkit emulator env)"``."""
    with _errors():
        click.echo(export_lines(_require_running(_workdir()).environment()))


@emulator.command()
@_configs_option("Deployment config; repeat for several.", default=[Path("config/realtime.yaml")])
@click.option("--port", type=click.IntRange(1, 65535), help="Port if the server must be started.")
@click.option(
    "--concurrency", type=click.IntRange(1, 16), default=2, show_default=True, help="Stacks at once."
)
def deploy(configs: tuple[Path, ...], port: int | None, concurrency: int) -> None:
    """Start the emulator if needed, ``cdk bootstrap`` it once, then ``cdk deploy --all`` each config."""
    with _errors():
        for config in configs:
            load_deployment(config)  # a bad file fails here, before a server or the CLI starts
        workdir = _workdir()
        server = _ensure_running(workdir, port)
        cli = _cli(server)
        if ensure_bootstrapped(server, cli, workdir) is not None:
            click.echo("bootstrapped the emulator (CDKToolkit)", err=True)
        for config in configs:
            app = deploy_config(server, cli, config, workdir, concurrency=concurrency)
            if app.image_tag:
                click.echo(
                    f"{config}: image.source build deployed as ECR image tag {app.image_tag!r}", err=True
                )
            for skipped in app.skipped:
                click.echo(f"not created by moto: {skipped}", err=True)
            for stack in app.stacks:
                for key, value in sorted(stack.outputs.items()):
                    if not key.startswith(CROSS_STACK_EXPORT):
                        click.echo(f"{stack.name}.{key} = {value}")
        click.echo(f'emulator: {server.endpoint_url}  (eval "$(smkit emulator env)" to use it)', err=True)


@emulator.command()
@_configs_option(
    "Config whose stacks to destroy; repeat for several [default: every one deployed from here]."
)
def destroy(configs: tuple[Path, ...]) -> None:
    """``cdk destroy --all`` the stacks of each config, then list what is left in the emulator."""
    with _errors():
        workdir = _workdir()
        server = _running_or_say(workdir, "; nothing to destroy")
        if server is None:
            return
        cli = _cli(server)
        if configs:
            for config in configs:
                destroy_config(cli, config, workdir)
                shutil.rmtree(workdir / f"cdk.out.{config.stem}", ignore_errors=True)
        else:
            for assembly in sorted(workdir.glob("cdk.out.*")):
                cli.destroy(assembly=assembly.resolve())
                shutil.rmtree(assembly)
        left = {
            "stacks": live_stacks(server.client("cloudformation")),
            "sagemaker": sagemaker_resources(server.client("sagemaker")),
        }
        click.echo(json.dumps(left, indent=2))
