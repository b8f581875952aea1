"""The real CDK CLI (the version pinned in package.json) pointed at moto's server.

Each call runs the pinned CLI with the emulator's environment: ``node_modules/.bin/cdk`` in a checkout
(``npm ci``), else ``npx --yes aws-cdk@<pin>`` as ``smkit deploy`` does (smkit.cdkcli), so a project made
by ``smkit init`` deploys into the emulator without a package.json.
Deploys use ``--method=direct`` (CreateStack/UpdateStack): moto returns stack Outputs only for those, not
for change-set deploys (docs/toolchain.md), and CI's smoke test reads the endpoint name from the Outputs.
Each deploy synthesizes into its own output directory, so that several configs can deploy at once and
``destroy`` can reuse the cloud assembly instead of synthesizing again.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from smkit.cdkcli import CdkCliError, cli_command
from smkit.config.overrides import IMAGE_TAG_CONTEXT
from smkit.emulator.client_env import ACCOUNT_ID

CDK_BIN = Path("node_modules") / ".bin" / "cdk"
BOOTSTRAP_STACK = "CDKToolkit"
# Deploys into moto take seconds; a hung CLI (e.g. a custom resource whose Lambda never answers) must not
# hang `make test`.
CDK_TIMEOUT_S = 600
LOG_TAIL_LINES = 40
# --method=direct: CreateStack/UpdateStack, for which moto returns stack Outputs (see the module docstring).
_DEPLOY_ARGS = ("deploy", "--all", "--require-approval", "never", "--method=direct", "--progress", "events")


class CdkError(RuntimeError):
    """A CDK CLI call failed; the message carries the command and the end of its output."""


@dataclass(frozen=True)
class CdkResult:
    """What a finished CDK CLI call printed and how long it took."""

    args: tuple[str, ...]
    output: str
    seconds: float


@dataclass(frozen=True)
class CdkCli:
    """Runs the pinned CDK CLI from ``repo_root`` with ``env`` (see ``child_environment``).

    With ``stream=True`` the CLI writes to this process's terminal (``make deploy-local``); otherwise its
    output is captured and returned, and quoted in the error when it fails. ``app`` is the ``--app`` of
    synth and deploy (default: the app of ``repo_root``'s cdk.json).
    """

    repo_root: Path
    env: Mapping[str, str]
    stream: bool = False
    app: str | None = None

    @property
    def command(self) -> list[str]:
        """The CLI installed by ``make setup`` (``npm ci``), else the pinned version through npx."""
        installed = self.repo_root / CDK_BIN
        if installed.exists():
            return [str(installed)]
        try:
            return cli_command()
        except CdkCliError as exc:
            raise CdkError(f"{exc}; in a checkout, `make setup` (npm ci) installs it") from None

    def run(self, args: Sequence[str], *, cwd: Path | None = None) -> CdkResult:
        """Run ``cdk ARGS`` and return its output; raise :class:`CdkError` on a non-zero exit."""
        command = [*self.command, *args, "--no-notices"]
        started = time.monotonic()
        try:
            completed = subprocess.run(
                command,
                cwd=cwd or self.repo_root,
                env=dict(self.env),
                stdin=subprocess.DEVNULL,
                stdout=None if self.stream else subprocess.PIPE,
                stderr=None if self.stream else subprocess.STDOUT,
                text=True,
                timeout=CDK_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise CdkError(
                f"`cdk {' '.join(args)}` did not finish within {CDK_TIMEOUT_S} s (the bound on a hung CLI, "
                "smkit.emulator.cdk.CDK_TIMEOUT_S; a deploy into moto takes seconds)"
                + _tail(_text(exc.output))
            ) from None
        output = completed.stdout or ""
        if completed.returncode != 0:
            raise CdkError(
                f"`cdk {' '.join(args)}` failed with exit status {completed.returncode}" + _tail(output)
            )
        return CdkResult(args=tuple(args), output=output, seconds=time.monotonic() - started)

    def bootstrap(self, *, region: str, account: str = ACCOUNT_ID, workdir: Path) -> CdkResult:
        """``cdk bootstrap aws://ACCOUNT/REGION``, run from ``workdir`` (an empty directory) so that the
        CLI bootstraps the named environment without synthesizing the app first."""
        workdir.mkdir(parents=True, exist_ok=True)
        return self.run(["bootstrap", f"aws://{account}/{region}"], cwd=workdir)

    def synth(self, *, config: Path, outdir: Path, image_tag: str | None = None) -> CdkResult:
        """``cdk synth -c config=CONFIG [-c image_tag=TAG] -o OUTDIR`` (quiet: templates stay in OUTDIR)."""
        return self.run(["synth", "--quiet", *self._app(), *_context(config, image_tag), "-o", str(outdir)])

    def deploy(
        self, *, config: Path, outdir: Path, concurrency: int = 1, image_tag: str | None = None
    ) -> CdkResult:
        """``cdk deploy --all`` of the app in cdk.json for one config, synthesizing into ``outdir``."""
        return self.run(
            [
                *_DEPLOY_ARGS,
                "--concurrency",
                str(concurrency),
                *self._app(),
                *_context(config, image_tag),
                "-o",
                str(outdir),
            ]
        )

    def deploy_assembly(self, *, assembly: Path, concurrency: int = 1) -> CdkResult:
        """``cdk deploy --all`` of an already synthesized cloud assembly (``--app DIR``: no synth)."""
        return self.run([*_DEPLOY_ARGS, "--concurrency", str(concurrency), "--app", str(assembly)])

    def destroy(self, *, assembly: Path, concurrency: int = 1) -> CdkResult:
        """``cdk destroy --all --force`` for the stacks of a cloud assembly (e.g. from :meth:`deploy`)."""
        return self.run(
            ["destroy", "--all", "--force", "--concurrency", str(concurrency), "--app", str(assembly)]
        )

    def _app(self) -> list[str]:
        return ["--app", self.app] if self.app else []


def _context(config: Path, image_tag: str | None) -> list[str]:
    """The app's context arguments: the config file and, when set, the image tag (app.py reads both)."""
    args = ["-c", f"config={config}"]
    if image_tag:
        args += ["-c", f"{IMAGE_TAG_CONTEXT}={image_tag}"]
    return args


def _text(value: str | bytes | None) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _tail(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    if not lines:
        return ""
    return f"; last {min(len(lines), LOG_TAIL_LINES)} lines of its output:\n" + "\n".join(
        lines[-LOG_TAIL_LINES:]
    )


def repo_root_from(start: Path | None = None) -> Path:
    """The repository root: the nearest directory from ``start`` (default: cwd) up that holds cdk.json."""
    here = (start or Path(os.getcwd())).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "cdk.json").is_file():
            return candidate
    raise CdkError(f"no cdk.json in {here} or any parent; run this from the repository")
