"""The load client: a closed loop of keep-alive HTTP/1.1 requests from one thread per virtual user."""

from __future__ import annotations

import http.client
import itertools
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from bench.common import LOOPBACK


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
    busiest_process_cpu_share: float | None = None
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


def read_response(sock: socket.socket, buf: bytes) -> tuple[int, bytes, bytes, bool]:
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
                code, payload, buf, closes = read_response(sock, buf)
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
