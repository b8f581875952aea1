"""Start ``python -m smkit.serving`` on a TF Serving model and talk to both of its ports over sockets."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from waiting import wait_until

from smkit.ops.server_process import Launch, ServerProcess
from smkit.process import free_port, ping, stop_group

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "model_code" / "tf_insurance"


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")


def call(
    port: int, method: str, path: str, body: bytes | str | None = None, headers: dict[str, str] | None = None
) -> Reply:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        data = body.encode() if isinstance(body, str) else body
        conn.request(method, path, body=data, headers=headers or {})
        resp = conn.getresponse()
        return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
    finally:
        conn.close()


@dataclass
class TfsServer:
    """A running TF Serving form server: the container port and TensorFlow Serving's REST port."""

    proc: subprocess.Popen[bytes]
    port: int
    rest_port: int
    log_path: Path

    def request(self, method: str, path: str, body: bytes | str | None = None, **headers: str) -> Reply:
        return call(self.port, method, path, body, {k.replace("_", "-"): v for k, v in headers.items()})

    def rest(self, method: str, path: str, body: bytes | str | None = None) -> Reply:
        return call(self.rest_port, method, path, body)

    def invoke(
        self, body: bytes | str, content_type: str | None = "application/json", **headers: str
    ) -> Reply:
        if content_type is not None:
            headers["Content_Type"] = content_type
        return self.request("POST", "/invocations", body, **headers)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> int:
        return int(stop_group(self.proc, grace_s=30) or 0)


def start(
    tmp: Path, model: Path, *, env: dict[str, str] | None = None, args: tuple[str, ...] = ()
) -> TfsServer:
    """Serve ``model``; return once ``/ping`` answers (or raise with the log when the process exits)."""
    port = free_port()
    low = free_port(count=2)  # SAGEMAKER_SAFE_PORT_RANGE's gRPC and REST ports
    log_path = tmp / f"tfs-{port}.log"
    full_env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "SAGEMAKER_SAFE_PORT_RANGE": f"{low}-{low + 10}",
        **(env or {}),
    }
    launch = Launch(
        name="the TF Serving form server",
        command=lambda chosen: [
            *(sys.executable, "-m", "smkit.serving", "--model", str(model), "--port", str(chosen)),
            *args,
        ],
        environment=lambda _port: full_env,
        log_path=log_path,
        port=port,
        cwd=REPO,
    )
    # Its own process group, tied to this test process: a killed test run leaves no server behind. Waited
    # for below until /ping answers at all: 502 says the default model is not AVAILABLE (smkit/tfs/defaults.py),
    # which some of these tests ask for.
    proc = ServerProcess.spawn(launch).process
    server = TfsServer(proc, port, low + 1, log_path)

    def answers() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}:\n{server.log()}")
        return ping(port)[0] in (200, 502)

    try:
        wait_until(
            answers, timeout=120, interval=0.05, what=lambda: f"GET /ping to answer; log:\n{server.log()}"
        )
    except AssertionError:
        server.stop()
        raise
    return server


def tarball(model_dir: Path, dest: Path) -> Path:
    with tarfile.open(dest, "w:gz") as tar:
        for path in sorted(model_dir.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(model_dir)), recursive=False)
    return dest


def model_dir(
    root: Path, saved_models: Path, names: tuple[str, ...], code: dict[str, str] | None = None
) -> Path:
    """A model directory holding the named SavedModels and, if given, ``code/`` files."""
    for name in names:
        shutil.copytree(saved_models / name, root / name)
    for rel, text in (code or {}).items():
        path = root / "code" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
