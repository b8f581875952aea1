"""The pinned AWS CDK CLI, found and run one way: ``smkit deploy``, ``smkit emulator`` and the release scripts.

aws-cdk-lib 2.275 writes cloud assemblies that the npm ``latest`` CLI (3.x) cannot read, so the CLI is
pinned (docs/toolchain.md). A project that installed it (a checkout after ``npm ci``: ``package.json`` pins
the same version, tests/stacks/test_cdk_cli.py keeps the two equal) runs its ``node_modules/.bin/cdk``;
anywhere else (a project made by ``smkit init`` from a pip-installed smkit) the CLI runs through
``npx --yes aws-cdk@<version>``, which npm fetches once into its cache (only Node.js is needed).

:class:`CdkCli` runs it from the project root with the environment it is given, either streaming to this
process's terminal or capturing the output to quote it when the call fails; a hung CLI is bounded by its
timeout. :class:`AppRun` is how every caller passes the config and the image tag to the app.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from smkit.config.overrides import IMAGE_TAG_CONTEXT

CDK_CLI_VERSION = "2.1148.1"
# The serving stacks' CDK app, run by ``smkit synth`` and as ``--app`` of the CLI.
APP_MODULE = "smkit.cdk.app"
# Where ``npm ci`` installs the pinned CLI in a project with a package.json.
INSTALLED_CLI = Path("node_modules") / ".bin" / "cdk"
LOG_TAIL_LINES = 40


class CdkError(RuntimeError):
    """The CDK CLI cannot be run, or a call failed: the message says what to install, or carries the
    command and the end of its output; ``returncode`` is the CLI's exit status (None: it did not run)."""

    def __init__(self, message: str, returncode: int | None = None) -> None:
        super().__init__(message)
        self.returncode = returncode


@dataclass(frozen=True)
class CdkResult:
    """What a finished CDK CLI call printed (empty when it streamed) and how long it took."""

    args: tuple[str, ...]
    output: str
    seconds: float


def cli_command(root: Path) -> list[str]:
    """The pinned CLI for a project at ``root``, as run from ``root``: ``node_modules/.bin/cdk`` when the
    project installed it, else ``npx --yes aws-cdk@<pinned>`` (:class:`CdkError` when there is no npx)."""
    if (root / INSTALLED_CLI).exists():
        return [INSTALLED_CLI.as_posix()]
    npx = shutil.which("npx")
    if npx is None:
        raise CdkError(
            f"smkit runs the AWS CDK CLI aws-cdk@{CDK_CLI_VERSION} through npx, which is not on PATH; "
            "install Node.js 20 or newer (https://nodejs.org), which provides npx; in a checkout, "
            "`make setup` (npm ci) installs the CLI itself"
        )
    return [npx, "--yes", f"aws-cdk@{CDK_CLI_VERSION}"]


@dataclass(frozen=True)
class AppRun:
    """One run of the serving app: the ``config`` it synthesizes, the folder it writes the cloud assembly to
    (``output``), the image tag it pins and extra context (``KEY=VALUE``)."""

    config: Path
    output: str | Path
    image_tag: str | None = None
    context: Sequence[str] = ()

    def args(self) -> list[str]:
        """``--output DIR -c config=FILE [-c image_tag=TAG] [-c KEY=VALUE ...]``: what the app reads."""
        args = ["--output", str(self.output), "-c", f"config={self.config.as_posix()}"]
        if self.image_tag:
            args += ["-c", f"{IMAGE_TAG_CONTEXT}={self.image_tag}"]
        for item in self.context:
            args += ["-c", item]
        return args


@dataclass(frozen=True)
class CdkCli:
    """The pinned CDK CLI of the project at ``root``, run there with ``env`` (None: this process's).

    With ``stream=True`` the CLI writes to this process's terminal; otherwise its output is captured,
    returned, and quoted in the error when it fails. ``app`` is the ``--app`` that :meth:`app_args` adds
    (None: the app of ``root``'s cdk.json). ``method``: how deploys change stacks, ``change-set``, or
    ``direct`` (CreateStack/UpdateStack, which moto's emulation needs: it returns stack outputs only for
    those, docs/toolchain.md). ``timeout_s`` bounds a hung CLI (None: no bound; a real deploy waits for
    SageMaker as long as it takes). ``notices``: let the CLI print the CDK team's notices (a user's own
    ``smkit deploy``); otherwise each call passes ``--no-notices``. ``interactive``: a deploy from a user's
    terminal asks before it broadens IAM permissions; otherwise (CI, the emulator) it never asks and runs
    with ``--ci``. ``echo``: called with each command line (``+ cdk ...``) before it runs.
    """

    root: Path
    env: Mapping[str, str] | None = None
    stream: bool = False
    app: str | None = None
    method: str | None = None
    timeout_s: float | None = None
    notices: bool = False
    interactive: bool = False
    echo: Callable[[str], None] | None = None

    @property
    def command(self) -> list[str]:
        """The CLI's own command line as run from the root, without arguments (:func:`cli_command`)."""
        return cli_command(self.root)

    def argv(self, args: Sequence[str]) -> list[str]:
        """The command line of ``cdk ARGS`` as run from the root, for a caller that shows or runs it there."""
        return [*self.command, *args]

    def app_args(self) -> list[str]:
        """``--app APP`` when the CLI is to run an app other than cdk.json's."""
        return ["--app", self.app] if self.app else []

    def run(self, args: Sequence[str], *, cwd: Path | None = None) -> CdkResult:
        """Run ``cdk ARGS`` (``--no-notices`` last, unless ``notices``) from ``cwd`` (default: the root);
        :class:`CdkError` on a non-zero exit or when the timeout runs out."""
        command = [*self.command, *args, *([] if self.notices else ["--no-notices"])]
        if self.echo is not None:
            self.echo(f"+ {shlex.join(self.argv(args))}")
        if command[0] == INSTALLED_CLI.as_posix():
            command[0] = str((self.root / INSTALLED_CLI).absolute())  # runs from any folder
        started = time.monotonic()
        try:
            completed = subprocess.run(
                command,
                cwd=cwd or self.root,
                env=dict(self.env) if self.env is not None else None,
                stdin=subprocess.DEVNULL,
                stdout=None if self.stream else subprocess.PIPE,
                stderr=None if self.stream else subprocess.STDOUT,
                text=True,
                timeout=self.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise CdkError(
                f"`cdk {' '.join(args)}` did not finish within {self.timeout_s:.0f} s (the bound on a hung "
                "CLI)" + _tail(_text(exc.output))
            ) from None
        output = completed.stdout or ""
        if completed.returncode != 0:
            raise CdkError(
                f"`cdk {' '.join(args)}` failed with exit status {completed.returncode}" + _tail(output),
                completed.returncode,
            )
        return CdkResult(args=tuple(args), output=output, seconds=time.monotonic() - started)

    # --- the calls smkit makes -----------------------------------------------------------------------

    def synth_args(self, app: AppRun) -> list[str]:
        """``synth --quiet [--app APP] --output DIR -c config=...``: offline, templates stay in DIR."""
        return ["synth", "--quiet", *self.app_args(), *app.args()]

    def deploy_args(
        self,
        *,
        stacks: Sequence[str] = ("--all",),
        concurrency: int | None = None,
        assembly: str | Path | None = None,
        app: AppRun | None = None,
        extra: Sequence[str] = (),
    ) -> list[str]:
        """``deploy STACKS`` of a synthesized ``assembly`` (``--app DIR``: no synth) or through the serving
        ``app`` (synthesized on the way), then ``extra`` (a user's own CLI options); unattended (no approval
        prompt, events as progress) unless the CLI is ``interactive``."""
        args = ["deploy", *stacks]
        if self.interactive:
            args += ["--require-approval", "broadening"]
        else:
            args += ["--require-approval", "never", "--progress", "events", "--ci"]
        if self.method is not None:
            args.append(f"--method={self.method}")
        if concurrency is not None:
            args += ["--concurrency", str(concurrency)]
        if assembly is not None:
            return [*args, "--app", str(assembly), *extra]
        assert app is not None, "deploy of an assembly or through the app"
        return [*args, *self.app_args(), *app.args(), *extra]

    def bootstrap_args(
        self, *, environments: Sequence[str] = (), assembly: str | Path | None = None
    ) -> list[str]:
        """``bootstrap --ci``: the named environments (``aws://ACCOUNT/REGION``), or those the synthesized
        ``assembly`` deploys to (read from it instead of running the app again)."""
        return [
            "bootstrap",
            "--ci",
            *environments,
            *(["--app", str(assembly)] if assembly is not None else []),
        ]

    def destroy_args(self, *, assembly: str | Path, concurrency: int = 1) -> list[str]:
        """``destroy --all --force`` of the stacks of a synthesized cloud assembly."""
        return ["destroy", "--all", "--force", "--concurrency", str(concurrency), "--app", str(assembly)]

    def bootstrap(
        self, environments: Sequence[str] = (), *, assembly: Path | None = None, cwd: Path | None = None
    ) -> CdkResult:
        """``cdk bootstrap`` (:meth:`bootstrap_args`), from ``cwd`` (an empty folder bootstraps the named
        environments without synthesizing an app first)."""
        if cwd is not None:
            cwd.mkdir(parents=True, exist_ok=True)
        return self.run(self.bootstrap_args(environments=environments, assembly=assembly), cwd=cwd)

    def synth(
        self, *, config: Path, outdir: Path, image_tag: str | None = None, context: Sequence[str] = ()
    ) -> CdkResult:
        """``cdk synth`` of ``config`` into ``outdir`` (:meth:`synth_args`)."""
        return self.run(self.synth_args(AppRun(config, outdir, image_tag, context)))

    def deploy(
        self, *, config: Path, outdir: Path, concurrency: int = 1, image_tag: str | None = None
    ) -> CdkResult:
        """``cdk deploy --all`` of ``config`` through the app, synthesizing into ``outdir``."""
        return self.run(self.deploy_args(app=AppRun(config, outdir, image_tag), concurrency=concurrency))

    def deploy_assembly(
        self, *, assembly: Path, stacks: Sequence[str] = ("--all",), concurrency: int = 1
    ) -> CdkResult:
        """``cdk deploy STACKS`` of an already synthesized cloud assembly (``--app DIR``: no synth)."""
        return self.run(self.deploy_args(stacks=stacks, assembly=assembly, concurrency=concurrency))

    def destroy(self, *, assembly: Path, concurrency: int = 1) -> CdkResult:
        """``cdk destroy --all --force`` of the stacks of a cloud assembly."""
        return self.run(self.destroy_args(assembly=assembly, concurrency=concurrency))


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
