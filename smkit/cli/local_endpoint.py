"""``smkit local-endpoint``: run a deployment config's endpoint locally behind the SageMaker Runtime API."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import click

from smkit.cli.shared_options import config_option
from smkit.config import ConfigError, load_deployment
from smkit.config.resolved.names import deployed_names
from smkit.digest import sha256_file

if TYPE_CHECKING:
    from smkit.local import LocalEndpoint


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _describe(endpoint: object) -> str:
    from smkit.local import LocalEndpoint

    assert isinstance(endpoint, LocalEndpoint)
    runtime = endpoint.runtime
    lines = [f"local endpoint {endpoint.name} ({runtime.kind}) on {endpoint.url}"]
    for variant in runtime.variants:
        containers = ", ".join(
            f"{p.label} pid {p.pid} at http://127.0.0.1:{p.port}"
            if p.running
            else f"{p.label} (starts on first call)"
            for p in variant.processes
        )
        lines.append(f"  variant {variant.name} weight {variant.weight:g}: {containers}")
        lines += [f"    {p.label}: {_workers(p)}" for p in variant.processes]
    if runtime.shadows is not None:
        for shadow in runtime.shadows.shadows:
            lines.append(
                f"  shadow variant {shadow.variant.name}: {shadow.sampling_percentage}% of requests copied, "
                "answers captured only"
            )
    for name, component in getattr(runtime, "components", {}).items():
        p = component.process
        if name in getattr(runtime, "adapters", {}):
            lines.append(
                f"  inference component {name}: a LoRA adapter loaded into {p.label}'s engine, from "
                f"{component.weights}"
            )
            continue
        lines.append(
            f"  inference component {name}: {p.label} pid {p.pid} at http://127.0.0.1:{p.port}"
            + (" (scales to zero)" if component.scales_to_zero else "")
            + f", {_workers(p)}"
        )
    for archive in sorted(set(runtime.archives.values())):
        lines.append(f"  model data {archive} (sha256 {sha256_file(archive)})")
    if runtime.capture is not None:
        lines.append(
            f"  data capture ({runtime.capture.spec.sampling_percentage}%) under {runtime.capture.root}"
        )
    if runtime.asynchronous is not None:
        lines.append(f"  async output {runtime.asynchronous.output_path}")
        lines.append(f"  async failures {runtime.asynchronous.failure_path}")
        if runtime.asynchronous.notification_log is not None:
            lines.append(f"  notifications {runtime.asynchronous.notification_log}")
    lines.append(
        f'  boto3.client("sagemaker-runtime", endpoint_url="{endpoint.url}", region_name="{endpoint.settings.region}")'
    )
    # Only where the route answers: per component, and nowhere on an asynchronous, multi-model or direct
    # multi-container endpoint (the route sends no TargetModel or TargetContainerHostname).
    for component in runtime.openai_targets():
        lines.append(
            f'  OpenAI(base_url="{endpoint.openai_base_url(component)}", api_key=<smkit token --region '
            f"{endpoint.settings.region}>)"
        )
    if endpoint.verifies_signatures:
        lines.append(
            "  SigV4 signatures are checked (--verify-signatures, or local.verify_signatures in the config)"
        )
    # What the same config is called once deployed (smkit synth says the same): the serving stack's names.
    deployed = deployed_names(runtime.deployment)
    lines.append(f"  deployed by smkit deploy as {deployed.lines()[0]}")
    lines += [f"    {line}" for line in deployed.lines()[1:]]
    lines.append("  Ctrl-C (or SIGTERM) stops the gateway and every container.")
    return "\n".join(lines)


def _workers(process: Any) -> str:
    if process.workers is None and hasattr(process, "engine"):  # smkit.local.engines.EngineProcess
        return f"{process.engine} engine, arguments {' '.join(process.arguments) or '(none)'}"
    n = process.workers
    return f"{n} model worker{'s' if n != 1 else ''} ({process.workers_reason})"


@click.command("local-endpoint")
@config_option("Deployment config, e.g. config/realtime.yaml.")
@click.option("--port", default=8080, show_default=True, help="Gateway port on 127.0.0.1 (0: any free port).")
@click.option("--name", help="EndpointName clients pass (default: the config's name).")
@click.option(
    "--log-dir", type=click.Path(file_okay=False, path_type=Path), help="Write container logs here."
)
@click.option(
    "--workers",
    type=int,
    help="Model workers per container, overriding the config (default: the container's "
    "SAGEMAKER_MODEL_SERVER_WORKERS, else the instance type's vCPUs capped by this machine's CPUs).",
)
@click.option(
    "--serverless-idle-seconds",
    default=300.0,
    show_default=True,
    help="Serverless without provisioned concurrency goes cold after this long idle.",
)
@click.option(
    "--component-idle-seconds",
    default=300.0,
    show_default=True,
    help="An inference component with min_copies: 0 releases its copy after this long idle.",
)
@click.option(
    "--async-output", help="s3://BUCKET/PREFIX or file:///DIR for async results (default build/local/NAME)."
)
@click.option(
    "--notification-log", type=click.Path(dir_okay=False, path_type=Path), help="Async notifications."
)
@click.option(
    "--s3-endpoint-url", help="S3 endpoint for s3:// locations (moto's server); default: environment."
)
@click.option(
    "--cloudwatch-endpoint-url",
    help="Publish SageMaker's invocation metrics (AWS/SageMaker) to this CloudWatch: the emulator's URL "
    "(smkit emulator status); default: none published.",
)
@click.option(
    "--region", help="Region reported in ARNs and messages (default: the config's, else us-east-1)."
)
@click.option("--seed", type=int, help="Seed for the weighted variant choice.")
@click.option(
    "--python",
    type=click.Path(exists=True, dir_okay=False),
    help="Run every container with this interpreter instead of its model's environment (smkit env).",
)
@click.option(
    "--verify-signatures",
    is_flag=True,
    envvar="SMKIT_VERIFY_SIGNATURES",
    help="Check the SigV4 signature of every runtime call as SageMaker does (region, service, 5-minute clock "
    "skew, payload hash) against the local credentials: local/local and this environment's "
    "(env SMKIT_VERIFY_SIGNATURES=1).",
)
@click.option(
    "--no-package",
    is_flag=True,
    help="Serve the archives as they are, without packaging those older than their model_code/ sources.",
)
def local_endpoint(
    config_path: Path,
    port: int,
    name: str | None,
    log_dir: Path | None,
    workers: int | None,
    serverless_idle_seconds: float,
    component_idle_seconds: float,
    async_output: str | None,
    notification_log: Path | None,
    s3_endpoint_url: str | None,
    cloudwatch_endpoint_url: str | None,
    region: str | None,
    seed: int | None,
    python: str | None,
    verify_signatures: bool,
    no_package: bool,
) -> None:
    """Start the serving processes a config describes and a SageMaker Runtime gateway in front of them.

    Each container runs in its model's environment: the image's Python and packages plus the archive's
    code/requirements.txt, installed offline from code/wheels when the archive vendors them (as on AWS with
    network isolation); built once and cached (smkit env).
    """
    from smkit.local import LocalEndpoint, LocalEndpointError
    from smkit.object_store import StorageError, check_uri

    if workers is not None and workers < 1:
        raise click.BadParameter(f"{workers}: must be >= 1", param_hint="--workers")
    if async_output is not None:
        try:
            check_uri(async_output, what="--async-output")
        except StorageError as exc:
            raise click.BadParameter(str(exc), param_hint="--async-output") from None
    try:
        deployment = load_deployment(config_path)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    if not no_package:
        from smkit.cli.project import ensure_archives

        ensure_archives(config_path)
    settings: dict[str, Any] = {
        "log_dir": log_dir.resolve() if log_dir else None,
        "workers": workers,
        "serverless_idle_seconds": serverless_idle_seconds,
        "component_idle_seconds": component_idle_seconds,
        "async_output": async_output,
        "notification_log": notification_log,
        "s3_endpoint_url": s3_endpoint_url,
        "cloudwatch_endpoint_url": cloudwatch_endpoint_url,
        "seed": seed,
        "python": python,
        "verify_signatures": verify_signatures,
    }
    if region:
        settings["region"] = region  # else the config's region (or us-east-1)
    try:
        endpoint = LocalEndpoint(deployment, port=port, name=name, **settings)
    except LocalEndpointError as exc:  # a config the local endpoint refuses (smkit.local.unsupported)
        raise click.ClickException(str(exc)) from None
    _serve_until_stopped(endpoint)


def _serve_until_stopped(endpoint: LocalEndpoint) -> None:
    """Start ``endpoint``, say what runs where, and serve until Ctrl-C or SIGTERM; then stop every process."""
    from smkit.local import LocalEndpointError

    # Explicit for both: a shell may start background jobs with SIGINT ignored.
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        endpoint.start()
        click.echo(_describe(endpoint), err=True)
        stopped = threading.Event()
        while not stopped.wait(0.5):
            if not endpoint.serving:
                raise click.ClickException("the gateway stopped unexpectedly")
    except KeyboardInterrupt:
        click.echo("stopping local endpoint ...", err=True)
    except LocalEndpointError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        endpoint.stop()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
