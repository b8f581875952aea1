"""moto's server as the only emulated AWS: start, wait until ready, stop without leaving anything behind.

:class:`MotoServer` runs moto's server (``moto.server.main``, what the ``moto_server`` script runs, with
the repairs in :mod:`smkit.emulator.moto_fixes`) bound to 127.0.0.1 on a free port, in its own process
group so that stopping it ends every process it started. It is a context manager for tests and scripts::

    with MotoServer.start() as aws:
        s3 = aws.client("s3")

and a detached background process for the command line (``smkit emulator start``): the pid and port are
kept in a small JSON state file so that a later ``smkit emulator stop`` (or ``make destroy-local``) finds it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smkit.emulator.client_env import DEFAULT_REGION, aws_environment, endpoint_url_for
from smkit.ops.server_process import Launch, ServerProcess, probe_path
from smkit.process import HOST, ProcessStartError, Stoppable, group_alive, signal_group

if TYPE_CHECKING:
    pass

READY_PATH = "/moto-api/"
RESET_PATH = "/moto-api/reset"
# moto imports every service's backend before it answers; on two busy cores that has taken over 30 s.
# A server that exits is reported at once (smkit.ops.server_process), so the long limit only bounds a hung
# start.
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 10.0


class EmulatorError(RuntimeError):
    """moto's server could not be started, reached or stopped; the message says what to do."""


def port_in_use(port: int) -> bool:
    """True when something accepts TCP connections on 127.0.0.1:``port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((HOST, port)) == 0


def _answers(port: int) -> bool:
    return probe_path(port, READY_PATH)[0] == 200


def _pid_alive(pid: int) -> bool:
    # Reap it first if it is our own exited child (a detached server stopped by the process that
    # started it); otherwise the zombie would look alive.
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class MotoServer(Stoppable):
    """A running moto server. Build one with :meth:`start` or :meth:`attach`, end it with :meth:`stop`."""

    port: int
    pid: int
    region: str = DEFAULT_REGION
    log_path: Path | None = None
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    # --- lifecycle -----------------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        *,
        port: int | None = None,
        region: str = DEFAULT_REGION,
        log_path: Path | None = None,
        detach: bool = False,
    ) -> MotoServer:
        """Start moto's server on ``port`` (default: a free one) and return once it answers HTTP.

        ``log_path`` receives the server's request log (default: discarded). With ``detach=True`` the
        server outlives this Python process (used by ``smkit emulator start``); otherwise it is a child
        that :meth:`stop` or leaving the ``with`` block ends.
        """
        # moto's own server, with the CloudFormation adapter repairs listed in moto_fixes.FIXES.
        launch = Launch(
            name="moto's server",
            command=lambda chosen: [
                sys.executable,
                "-m",
                "smkit.emulator.moto_fixes",
                "-H",
                HOST,
                "-p",
                str(chosen),
            ],
            environment=lambda chosen: {**os.environ, "MOTO_PORT": str(chosen)},
            log_path=log_path,
            discard_output=True,
            timeout_s=START_TIMEOUT_S,
            limit="moto imports every service's backend before it answers (over 30 s on two busy cores); "
            "stop other work on the machine, or raise smkit.emulator.moto_server.START_TIMEOUT_S",
            ready_path=READY_PATH,
            port=port,
            tie_to_parent=not detach,
            stop_grace_s=STOP_TIMEOUT_S,
        )
        try:
            started = ServerProcess.start(launch)
        except ProcessStartError as exc:
            raise EmulatorError(str(exc)) from None
        # A detached server: nobody waits on it from here; the state file finds it.
        process = None if detach else started.process
        return cls(port=started.port, pid=started.pid, region=region, log_path=log_path, _process=process)

    def stop(self) -> None:
        """End the server's whole process group (SIGTERM, then SIGKILL) and wait until the port is free."""
        signal_group(self.pid, signal.SIGTERM)
        if not self._wait_gone(STOP_TIMEOUT_S):
            signal_group(self.pid, signal.SIGKILL)
            self._wait_gone(STOP_TIMEOUT_S)
        self._reap()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while port_in_use(self.port):
            if time.monotonic() > deadline:
                raise EmulatorError(f"port {self.port} is still in use after stopping moto (pid {self.pid})")
            time.sleep(0.05)

    def _wait_gone(self, timeout: float) -> bool:
        """Wait until the server process has exited and nothing is left in its process group."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            main_gone = (
                self._process.poll() is not None if self._process is not None else not _pid_alive(self.pid)
            )
            if main_gone and not group_alive(self.pid):
                return True
            time.sleep(0.05)
        return False

    def _reap(self) -> None:
        if self._process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=1)
            self._process = None

    def last_traceback(self, max_lines: int = 25) -> str:
        """The end of the last Python traceback in the server's log ("" without a log or a traceback).

        moto answers an internal error with a bare HTTP 500; the cause is only in its log.
        """
        if self.log_path is None or not self.log_path.exists():
            return ""
        lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
        if not starts:
            return ""
        block = [line for line in lines[starts[-1] :] if not line.startswith("127.0.0.1 - - [")]
        end = next(
            (i + 1 for i, line in enumerate(block[1:], 1) if not line.startswith((" ", "\t"))), len(block)
        )
        return "\n".join(block[:end][-max_lines:])

    # --- use -----------------------------------------------------------------------------------------

    @property
    def endpoint_url(self) -> str:
        """``http://localhost:PORT``: the URL the CDK CLI and boto3 must use (docs/toolchain.md)."""
        return endpoint_url_for(self.port)

    def is_running(self) -> bool:
        """True while the process lives and answers HTTP."""
        return _pid_alive(self.pid) and _answers(self.port)

    def environment(self) -> dict[str, str]:
        """Variables that point the CDK CLI and boto3 at this server (see ``aws_environment``)."""
        return aws_environment(self.endpoint_url, region=self.region)

    def client(self, service: str) -> Any:
        """A boto3 client for ``service`` talking to this server with the dummy credentials."""
        import boto3  # the `local` extra; imported here so the serving image never needs it

        env = self.environment()
        return boto3.client(
            service,
            endpoint_url=self.endpoint_url,
            region_name=self.region,
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        )

    def reset(self) -> None:
        """Forget every emulated resource (moto's ``POST /moto-api/reset``)."""
        request = urllib.request.Request(f"http://{HOST}:{self.port}{RESET_PATH}", method="POST")
        with urllib.request.urlopen(request, timeout=10) as resp:
            if resp.status != 200:
                raise EmulatorError(f"moto refused the reset with HTTP {resp.status}")

    # --- state file (detached servers) ---------------------------------------------------------------

    def save(self, state_file: Path) -> None:
        """Record pid, port and region so that :meth:`attach` finds this server later."""
        state_file.parent.mkdir(parents=True, exist_ok=True)
        state = {"pid": self.pid, "port": self.port, "region": self.region}
        if self.log_path is not None:
            state["log"] = str(self.log_path)
        tmp = state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
        tmp.replace(state_file)

    @classmethod
    def attach(cls, state_file: Path) -> MotoServer | None:
        """The server recorded in ``state_file`` if it still runs; removes a stale file and returns None."""
        try:
            state = json.loads(state_file.read_text(encoding="utf-8"))
            server = cls(
                port=int(state["port"]),
                pid=int(state["pid"]),
                region=str(state.get("region", DEFAULT_REGION)),
                log_path=Path(state["log"]) if state.get("log") else None,
            )
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as exc:
            raise EmulatorError(
                f"{state_file} is not a moto state file ({exc}); delete it and run `smkit emulator start`"
            ) from None
        if server.is_running():
            return server
        state_file.unlink(missing_ok=True)
        return None


@contextlib.contextmanager
def running_emulator(state_file: Path | None = None, **start_kwargs: Any) -> Iterator[MotoServer]:
    """The detached server recorded in ``state_file`` if one runs, else a fresh one stopped on exit."""
    existing = MotoServer.attach(state_file) if state_file is not None else None
    if existing is not None:
        yield existing
        return
    with MotoServer.start(**start_kwargs) as server:
        yield server
