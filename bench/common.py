"""Shared helpers for the benchmark scripts: server processes, a closed-loop load client, reports.

Every server is started in its own session (``start_new_session=True``) so that the whole process
tree, including processes that re-parent themselves (the Multi Model Server's Java frontend and its
Python workers), can be found again by session id, measured (RSS, CPU) and stopped.
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import platform
import random
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "bench" / "results"
BENCHMARKS_MD = REPO_ROOT / "BENCHMARKS.md"
LOOPBACK = "127.0.0.1"


class BenchError(RuntimeError):
    """A benchmark could not run (server did not start, bad payload, ...)."""


def free_port() -> int:
    """Return a loopback TCP port that is free right now, below 32767.

    Multi Model Server 1.1.11 rejects ports >= 32767 ("Invalid port number"), so the kernel's
    ephemeral range (32768+) cannot be used; every server in a run gets a port from the same range.
    """
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(20000, 32767)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((LOOPBACK, port))
            except OSError:
                continue
            return port
    raise BenchError("no free loopback port found in 20000-32766")


def _ping_once(port: int, timeout: float = 2.0) -> int:
    """Status of ``GET /ping`` (2 s timeout as SageMaker's health check, REFERENCE.md §1), 0 if refused."""
    conn = http.client.HTTPConnection(LOOPBACK, port, timeout=timeout)
    try:
        conn.request("GET", "/ping")
        response = conn.getresponse()
        response.read()
        return response.status
    except OSError:
        return 0
    finally:
        conn.close()


def invoke_once(port: int, request: Request, timeout: float = 30.0) -> tuple[int, bytes]:
    """Send ``request`` on a fresh connection: (status, body); status 0 when the connection fails."""
    conn = http.client.HTTPConnection(LOOPBACK, port, timeout=timeout)
    try:
        conn.request(request.method, request.path, body=request.body, headers=dict(request.headers))
        response = conn.getresponse()
        return response.status, response.read()
    except (OSError, http.client.HTTPException):
        return 0, b""
    finally:
        conn.close()


@dataclass
class ServerSpec:
    """How to start one server under test."""

    name: str
    argv: Sequence[str]
    port: int
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    startup_timeout_s: float = 120.0


class ManagedServer:
    """A running server: its session, cold-start time, process-tree RSS/CPU, and a clean stop."""

    def __init__(self, spec: ServerSpec, log_path: Path) -> None:
        self.spec = spec
        self.log_path = log_path
        self._log = log_path.open("wb")
        env = {**os.environ, **spec.env}
        self.started_at = time.perf_counter()
        self.process = subprocess.Popen(
            list(spec.argv),
            cwd=spec.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.session_id = self.process.pid
        self.cold_start_s: float | None = None
        self.stopped_pids: list[int] = []

    @property
    def port(self) -> int:
        return self.spec.port

    def wait_ready(self) -> float:
        """Poll ``GET /ping`` until 200; return seconds from process start to the first 200."""
        deadline = self.started_at + self.spec.startup_timeout_s
        while time.perf_counter() < deadline:
            if _ping_once(self.port) == 200:
                self.cold_start_s = time.perf_counter() - self.started_at
                return self.cold_start_s
            if self.process.poll() is not None and not self.processes():
                raise BenchError(
                    f"{self.spec.name} exited with code {self.process.returncode} before /ping answered 200; "
                    f"see its log {self.log_path}:\n{self.log_tail()}"
                )
            time.sleep(0.005)
        raise BenchError(
            f"{self.spec.name} did not answer 200 on /ping within {self.spec.startup_timeout_s:.0f} s; "
            f"see its log {self.log_path}:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 30) -> str:
        self._log.flush()
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def processes(self) -> list[psutil.Process]:
        """Every live process in the server's session (the server tree, re-parented or not)."""
        found = []
        for proc in psutil.process_iter():
            try:
                if os.getsid(proc.pid) == self.session_id and proc.status() != psutil.STATUS_ZOMBIE:
                    found.append(proc)
            except (OSError, psutil.Error):
                continue
        return found

    def rss_bytes(self) -> int:
        """Resident set size summed over the server's processes."""
        total = 0
        for proc in self.processes():
            try:
                total += proc.memory_info().rss
            except psutil.Error:
                continue
        return total

    def cpu_seconds(self) -> float:
        """User + system CPU seconds consumed so far by the server's live processes."""
        total = 0.0
        for proc in self.processes():
            try:
                times = proc.cpu_times()
            except psutil.Error:
                continue
            total += times.user + times.system
        return total

    def stop(self, grace_s: float = 10.0) -> list[int]:
        """SIGTERM the session, SIGKILL what is left after ``grace_s``; return the pids that needed SIGKILL.

        The Multi Model Server leaves its Python worker behind when its frontend stops (REFERENCE.md §8),
        so every process of the session is signalled by pid, not only the one we started.
        """
        self.stopped_pids = sorted(proc.pid for proc in self.processes())
        for pid in self.stopped_pids:
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and self.processes():
            time.sleep(0.05)
        killed = []
        for proc in self.processes():
            _signal(proc.pid, signal.SIGKILL)
            killed.append(proc.pid)
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            _signal(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=5)
        self._log.close()
        return killed


def _signal(pid: int, signo: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signo)


@contextmanager
def running(spec: ServerSpec, log_dir: Path) -> Iterator[ManagedServer]:
    """Start ``spec``, wait for its first 200 on /ping, and always stop the whole session afterwards."""
    log_dir.mkdir(parents=True, exist_ok=True)
    server = ManagedServer(spec, log_dir / f"{spec.name}.log")
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@dataclass(frozen=True)
class Request:
    """One pre-built HTTP request the load client repeats."""

    method: str
    path: str
    body: bytes
    headers: Mapping[str, str]


@dataclass
class LoadResult:
    """Outcome of one closed-loop run."""

    requests: int
    concurrency: int
    ok: int
    errors: int
    wall_s: float
    throughput_rps: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float
    client_cpu_s: float
    server_cpu_s: float | None = None
    error_samples: list[str] = field(default_factory=list)
    status_counts: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of an already sorted sequence; 0.0 when empty."""
    if not sorted_values:
        return 0.0
    rank = max(1, min(len(sorted_values), int(-(-q * len(sorted_values) // 100))))
    return sorted_values[rank - 1]


class _ResponseError(RuntimeError):
    pass


def _read_response(sock: socket.socket, buf: bytes) -> tuple[int, bytes, bytes, bool]:
    """Read one HTTP/1.1 response framed by Content-Length: (status, body, leftover bytes, server closes)."""
    while (end := buf.find(b"\r\n\r\n")) < 0:
        chunk = sock.recv(65536)
        if not chunk:
            raise _ResponseError("connection closed by the server")
        buf += chunk
    head = buf[:end].lower()
    status = int(head[9:12])
    at = head.find(b"\r\ncontent-length:")
    if at < 0:
        raise _ResponseError(f"response without Content-Length: {buf[:end][:300]!r}")
    line_end = head.find(b"\r\n", at + 2)
    length = int(head[at + 17 : line_end if line_end >= 0 else end])
    need = end + 4 + length
    while len(buf) < need:
        chunk = sock.recv(65536)
        if not chunk:
            raise _ResponseError("connection closed mid-body")
        buf += chunk
    closes = b"\r\nconnection: close" in head
    return status, buf[end + 4 : need], buf[need:], closes


def closed_loop(
    port: int,
    request: Request,
    *,
    total: int,
    concurrency: int,
    expect_body: bytes | None = None,
    timeout_s: float = 60.0,
) -> LoadResult:
    """Send ``total`` requests from ``concurrency`` virtual users, each waiting for its answer.

    Each virtual user is a thread with one keep-alive HTTP/1.1 connection (TCP_NODELAY), re-opened only
    after an error or a ``Connection: close``. The request bytes are built once and the response is
    framed by Content-Length: this client spends ~50-75 us of CPU per request against ~200 us for
    ``http.client`` (measured on the benchmark machine), which matters when client and servers share
    two cores. A request is an error when the connection fails, the status is not 200, or (with
    ``expect_body``) the body differs. Latency is measured from send to the last body byte.
    """
    counter = itertools.count()
    latencies: list[list[float]] = [[] for _ in range(concurrency)]
    statuses: list[dict[str, int]] = [{} for _ in range(concurrency)]
    samples: list[str] = []
    start_gate = threading.Barrier(concurrency + 1)
    header_lines = "".join(f"{key}: {value}\r\n" for key, value in request.headers.items())
    raw = (
        f"{request.method} {request.path} HTTP/1.1\r\nHost: {LOOPBACK}:{port}\r\n{header_lines}"
        f"Content-Length: {len(request.body)}\r\n\r\n"
    ).encode("latin-1") + request.body

    def connect() -> socket.socket:
        sock = socket.create_connection((LOOPBACK, port), timeout=timeout_s)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def user(index: int) -> None:
        mine = latencies[index]
        counts = statuses[index]
        sock: socket.socket | None = None
        buf = b""
        start_gate.wait()
        while next(counter) < total:
            began = time.perf_counter()
            try:
                if sock is None:
                    sock, buf = connect(), b""
                sock.sendall(raw)
                code, payload, buf, closes = _read_response(sock, buf)
                status = str(code)
                good = code == 200 and (expect_body is None or payload == expect_body)
                if not good and len(samples) < 5:
                    samples.append(f"{status}: {payload[:200]!r}")
                if closes:
                    sock.close()
                    sock = None
            except (OSError, ValueError, _ResponseError) as exc:
                status = type(exc).__name__
                good = False
                if len(samples) < 5:
                    samples.append(f"{status}: {exc}")
                if sock is not None:
                    sock.close()
                sock = None
            counts[status] = counts.get(status, 0) + 1
            if good:
                mine.append(time.perf_counter() - began)
        if sock is not None:
            sock.close()

    threads = [threading.Thread(target=user, args=(i,), daemon=True) for i in range(concurrency)]
    for thread in threads:
        thread.start()
    cpu_before = time.process_time()
    start_gate.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    client_cpu = time.process_time() - cpu_before

    merged = sorted(x for per_user in latencies for x in per_user)
    status_counts: dict[str, int] = {}
    for counts in statuses:
        for key, value in counts.items():
            status_counts[key] = status_counts.get(key, 0) + value
    ok = len(merged)
    return LoadResult(
        requests=total,
        concurrency=concurrency,
        ok=ok,
        errors=total - ok,
        wall_s=round(wall, 4),
        throughput_rps=round(total / wall, 1) if wall > 0 else 0.0,
        p50_ms=round(percentile(merged, 50) * 1000, 3),
        p90_ms=round(percentile(merged, 90) * 1000, 3),
        p99_ms=round(percentile(merged, 99) * 1000, 3),
        max_ms=round((merged[-1] if merged else 0.0) * 1000, 3),
        mean_ms=round((sum(merged) / ok if ok else 0.0) * 1000, 3),
        client_cpu_s=round(client_cpu, 3),
        error_samples=samples,
        status_counts=status_counts,
    )


def machine_facts() -> dict[str, Any]:
    """What the numbers were measured on (cores are shared by client and servers)."""
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write ``data`` as indented JSON, atomically (temp file + rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    tmp.replace(path)


def replace_section(markdown_path: Path, section: str, body: str) -> None:
    """Replace the text between ``<!-- section:start -->`` and ``<!-- section:end -->`` markers.

    The markers are appended at the end of the file when missing, so the prose around them stays
    hand-written while the tables are always the ones the scripts last measured.
    """
    start, end = f"<!-- {section}:start -->", f"<!-- {section}:end -->"
    text = markdown_path.read_text() if markdown_path.exists() else "# Benchmarks\n"
    block = f"{start}\n{body.rstrip()}\n{end}"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        text = head + block + tail
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    markdown_path.write_text(text)
