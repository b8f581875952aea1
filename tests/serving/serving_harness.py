"""Helpers for the serving tests: start real servers on 127.0.0.1 and talk to them over sockets.

Kept out of conftest.py so test modules can import them by a name no other test folder uses."""

from __future__ import annotations

import http.client
import itertools
import json
import os
import signal
import subprocess
import sys
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smkit.hosting.env import ServingEnv
from smkit.ops.server_process import Launch, ServerProcess
from smkit.process import free_port
from smkit.serving.front.pool import PoolOptions
from smkit.serving.wire.messages import TEMPLATE_NAME

REPO = Path(__file__).resolve().parents[2]
READY_S = 30.0
_serial = itertools.count()
KILL_GRACE = PoolOptions.__dataclass_fields__["kill_grace"].default
__all__ = ["REPO", "Response", "Server", "free_port", "make_tarball", "start_server", "wait_ready"]


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Server:
    """A serving process started by a test."""

    proc: subprocess.Popen[bytes]
    port: int
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)

    def request(
        self,
        method: str,
        path: str,
        body: bytes | str | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 15.0,
    ) -> Response:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            data = body.encode() if isinstance(body, str) else body
            conn.request(method, path, body=data, headers=headers or {})
            resp = conn.getresponse()
            return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
        finally:
            conn.close()

    def try_request(self, method: str, path: str, **kwargs: Any) -> Response | None:
        """:meth:`request`, or None while nothing answers on the port (starting, stopping)."""
        try:
            return self.request(method, path, **kwargs)
        except OSError:
            return None

    def ping_when(self, done: Any) -> Response | None:
        """The ``GET /ping`` answer when ``done(answer)`` holds, else None (for :func:`wait_until`)."""
        answer = self.try_request("GET", "/ping")
        return answer if answer is not None and done(answer) else None

    def invoke(
        self,
        body: bytes | str,
        content_type: str | None = "text/csv",
        accept: str | None = None,
        **extra: str,
    ) -> Response:
        headers = dict(extra)
        if content_type is not None:
            headers["Content-Type"] = content_type
        if accept is not None:
            headers["Accept"] = accept
        return self.request("POST", "/invocations", body, headers)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def answer_bound(self, *, loading: bool = False) -> float:
        """Seconds within which this server answers any request, by its own limits.

        A request runs at most the invocation limit (plus ``SAGEMAKER_STARTUP_TIMEOUT`` when it loads a
        model) before the server answers 504; a worker that overruns is killed ``kill_grace`` later. A
        client waiting this long waits for the server's answer, whatever the machine's load: a model load
        (importing scikit-learn, say) can take several times its usual wall time on busy shared cores.
        """
        env = ServingEnv.from_environ(self.env)
        return env.timeout_seconds + (env.startup_timeout_seconds if loading else 0.0) + KILL_GRACE

    def children(self) -> list[int]:
        """The server's model workers: its child processes but the template they fork from."""
        found: list[int] = []
        for task in Path(f"/proc/{self.proc.pid}/task").glob("*/children"):
            found.extend(int(pid) for pid in task.read_text().split())
        return [pid for pid in found if _name(pid) != TEMPLATE_NAME]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 25.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return int(self.proc.returncode)


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def start_server(
    tmp: Path,
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    module: str = "smkit.serving",
    ready: bool = True,
    port: int | None = None,
    own_group: bool = False,
) -> Server:
    """Start ``python -m module args --port P``; wait for ``/ping`` 200 when ``ready``
    (:mod:`smkit.ops.server_process`: the kit's own start and readiness rule).

    The server leads a process group of its own (its pid), which a test can signal as a whole
    (``own_group`` is kept for the tests that say so)."""
    del own_group  # every start is in its own group
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    full_env.setdefault("SAGEMAKER_MODEL_SERVER_WORKERS", "2")
    bound = (env or {}).get("SAGEMAKER_BIND_TO_PORT")

    def command(chosen: int) -> list[str]:
        return [sys.executable, "-m", module, *args, *([] if bound else ["--port", str(chosen)])]

    launch = Launch(
        name=f"python -m {module}",
        command=command,
        environment=lambda _port: full_env,
        log_path=tmp / f"server-{next(_serial)}.log",
        timeout_s=READY_S,
        port=int(bound) if bound else port,
        cwd=REPO,
    )
    started = ServerProcess.start(launch) if ready else ServerProcess.spawn(launch)
    return Server(started.process, started.port, launch.log_path, full_env)


def wait_ready(server: Server, timeout: float = READY_S) -> None:
    """Until ``GET /ping`` answers 200 (the kit's readiness rule); fail at once if the server exits."""
    launch = Launch(name="the server", command=lambda _port: [], log_path=server.log_path, timeout_s=timeout)
    try:
        ServerProcess(launch, server.proc, server.port).wait()
    except BaseException:
        server.stop()
        raise


def make_tarball(model_dir: Path, dest: Path) -> Path:
    with tarfile.open(dest, "w:gz") as tar:
        for path in sorted(model_dir.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(model_dir)), recursive=False)
    return dest
