"""``smkit demo``: the README's main job on the local default, end to end and without Docker or AWS.

1. start the emulated AWS (moto's server on a free localhost port);
2. ``cdk bootstrap`` + ``cdk deploy --all`` the config into it with the real, pinned CDK CLI;
3. start the local endpoint for the same config under the endpoint name the deploy produced;
4. invoke it through the unmodified boto3 ``sagemaker-runtime`` client with CSV, JSON and NPY payloads
   (the model's ``samples/``) and check each answer against ``expected.json``;
5. print a summary table and shut everything down, also on Ctrl-C or SIGTERM.

The archives must exist (``make demo`` runs ``make package-model`` first).
"""

from __future__ import annotations

import signal
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import click

from smkit.config import ConfigError, load_deployment

if TYPE_CHECKING:
    from smkit.emulator import MotoServer


class Interrupts:
    """Ctrl-C (SIGINT) and SIGTERM raise KeyboardInterrupt, and are remembered.

    CPython discards an exception raised while a finalizer (``__del__``) or a weakref callback runs, so a
    KeyboardInterrupt that lands there is lost; the demo would then carry on. The remembered signal is
    raised again at the next step (:meth:`check`), so the demo always unwinds its ``with`` blocks and
    exits 130, whichever line the signal interrupted.
    """

    def __init__(self) -> None:
        self.received: int | None = None

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        self.received = signum
        raise KeyboardInterrupt

    def check(self) -> None:
        """Raise KeyboardInterrupt if a signal arrived (even one whose exception was swallowed)."""
        if self.received is not None:
            raise KeyboardInterrupt

    @contextmanager
    def installed(self) -> Iterator[Interrupts]:
        """Install the handlers for the block, restoring the previous ones after it."""
        previous = {sig: signal.signal(sig, self._handler) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _step(message: str, interrupts: Interrupts) -> float:
    interrupts.check()
    click.echo(click.style(f"==> {message}", bold=True))
    return time.monotonic()


def _done(started: float, interrupts: Interrupts, detail: str = "") -> None:
    click.echo(f"    done in {time.monotonic() - started:.1f} s{': ' + detail if detail else ''}")
    interrupts.check()


def _deployed_endpoint_name(server: MotoServer) -> str:
    from smkit.emulator import DeployMismatch

    endpoints = server.client("sagemaker").list_endpoints()["Endpoints"]
    if not endpoints:
        raise DeployMismatch("the deploy finished but the emulated account has no SageMaker endpoint")
    return str(endpoints[0]["EndpointName"])


def _table(rows: Sequence[tuple[str, ...]], header: tuple[str, ...]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join("-" * w for w in widths)
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*header), line, *(fmt.format(*r) for r in rows)])


def run_demo(config_path: Path, root: Path, interrupts: Interrupts) -> bool:
    """Run the five steps; return whether every invocation answered as expected."""
    from smkit.client import smoke
    from smkit.emulator import MotoServer, child_environment, deploy_config, emulator_cli, ensure_bootstrapped
    from smkit.local import LocalEndpoint

    deployment = load_deployment(config_path)
    cases = smoke.plan(deployment, root)
    with tempfile.TemporaryDirectory(prefix="smkit-demo-") as tmp:
        workdir = Path(tmp)
        started = _step("Starting the emulated AWS (moto server)", interrupts)
        with MotoServer.start(log_path=workdir / "moto.log") as server:
            _done(started, interrupts, f"http://localhost:{server.port}")
            cli = emulator_cli(root, child_environment(server.endpoint_url, region=server.region))

            started = _step(f"cdk bootstrap + cdk deploy --all -c config={config_path}", interrupts)
            ensure_bootstrapped(server, cli, workdir)
            app = deploy_config(server, cli, config_path, workdir)
            endpoint_name = _deployed_endpoint_name(server)
            stacks = ", ".join(s.name for s in app.stacks)
            _done(started, interrupts, f"stacks {stacks}; endpoint {endpoint_name} InService")

            started = _step(
                f"Starting the local endpoint for {deployment.name} ({deployment.endpoint_type})", interrupts
            )
            with LocalEndpoint(
                deployment, name=endpoint_name, log_dir=workdir / "logs", data_capture_dir=workdir / "capture"
            ) as local:
                _done(started, interrupts, local.url)
                started = _step(f"Invoking {endpoint_name} through boto3 sagemaker-runtime", interrupts)
                results = smoke.run(local.client(), endpoint_name, cases)
                _done(started, interrupts)
            click.echo(
                f"    local endpoint stopped; emulated AWS stopping (deploy took {app.deploy.seconds:.1f} s)"
            )
        interrupts.check()

    rows = [
        (
            r.case.label,
            r.case.content_type,
            "ok" if r.ok else "FAILED",
            f"{r.seconds * 1000:.1f}",
            r.detail[:60],
        )
        for r in results
    ]
    click.echo()
    click.echo(_table(rows, ("payload", "content type", "result", "ms", "detail")))
    for r in results:
        if not r.ok:
            click.echo(f"\n{r.case.label}: {r.detail}", err=True)
    passed = sum(r.ok for r in results)
    click.echo(
        f"\n{passed}/{len(results)} invocations answered as expected by the local {deployment.endpoint_type} endpoint."
    )
    return passed == len(results)


@click.command()
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("config/realtime.yaml"),
    show_default=True,
    help="Deployment config to deploy into the emulated AWS and run locally.",
)
def demo(config_path: Path) -> None:
    """Deploy a config into the emulated AWS, run it locally, invoke it through boto3."""
    from smkit.client import smoke
    from smkit.emulator import CdkError, DeployMismatch, EmulatorError, repo_root_from

    root = repo_root_from()
    interrupts = Interrupts()
    try:
        with interrupts.installed():
            ok = run_demo(config_path, root, interrupts)
    except KeyboardInterrupt:
        click.echo("\ninterrupted: the local endpoint and the emulated AWS were shut down", err=True)
        raise SystemExit(130) from None
    except (ConfigError, smoke.SmokeError, EmulatorError, CdkError, DeployMismatch) as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(1) from None
    raise SystemExit(0 if ok else 1)
