"""Streamed answers: time to first byte and per-chunk overhead against the handler's own clock.

    python -m bench.streaming --nice -10          # writes bench/results/streaming.json and BENCHMARKS.md
    python -m bench.streaming --requests 3 --no-markdown --out /tmp/s.json              # smoke

One handler (``transform_fn`` returning a generator of 100 chunks of 64 bytes) records, for every chunk,
``time.monotonic()`` just before it yields it (the clock is the kernel's CLOCK_MONOTONIC, the same in
every process). Two paths, each with its own client on this machine:

- **serve**: ``python -m smkit.serving`` (front end + 1 model worker); a raw HTTP/1.1 socket client reads
  the chunked body and stamps each chunk when it has read it.
- **local endpoint**: ``smkit local-endpoint`` in front of the same model (gateway -> container); unmodified
  boto3 ``invoke_endpoint_with_response_stream`` stamps each ``PayloadPart`` as it iterates it (boto3's
  own parsing included: what an application sees).

Two handler modes per path: **paced** (1 ms between chunks: each chunk travels alone, so
``client stamp - handler stamp`` is the delivery latency of one chunk; the first one is the time to first
byte after the first yield) and **burst** (no pause: the overhead per chunk is how much longer the client
needs for chunks 1..99 than the handler needed to produce them, divided by 99). Goals (issue): first
byte within 5 ms of the first yield, per-chunk overhead under 0.2 ms. Medians over ``--requests``
streams after 3 warm-up streams; the machine's load average is recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.common import (
    BENCHMARKS_MD,
    LOOPBACK,
    REPO_ROOT,
    RESULTS_DIR,
    apply_niceness,
    exit_on_sigterm,
    machine_facts,
    replace_section,
    write_json,
)
from smkit.process import free_port, ping

CHUNKS = 100
CHUNK_BYTES = 64
HANDLER = """
import json
import time


def model_fn(model_dir):
    return None


def transform_fn(model, data, content_type, accept):
    request = json.loads(data)
    return chunks(request), "application/octet-stream"


def chunks(request):
    stamps = []
    pause = request["pause"]
    block = b"x" * request["size"]
    try:
        for _ in range(request["chunks"]):
            if pause:
                time.sleep(pause)
            stamps.append(time.monotonic())
            yield block
    finally:
        with open(request["stamps"], "w") as handle:
            json.dump(stamps, handle)
"""
CONFIG = """
name: bench-streaming
image: {source: build, context: ., dockerfile: Dockerfile}
model:
  containers:
    - name: generator
      model_data: {source: prefix, path: model}
endpoint:
  type: realtime
  variants:
    - {name: main, instance_type: ml.m5.large, initial_instance_count: 1, initial_weight: 1}
"""
Reader = Callable[[bytes], list[float]]  # request body -> client stamps, one per chunk


def _project(root: Path) -> Path:
    (root / "model" / "code").mkdir(parents=True)
    (root / "model" / "code" / "inference.py").write_text(textwrap.dedent(HANDLER))
    (root / "Dockerfile").write_text("FROM python:3.11-slim\n")
    (root / "endpoint.yaml").write_text(CONFIG)
    return root


@contextmanager
def _serve(model_dir: Path) -> Iterator[int]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "smkit.serving", "--model", str(model_dir), "--host", LOOPBACK]
        + ["--port", str(port), "--workers", "1"],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "SMKIT_ACCESS_LOG": "false"},
    )
    try:
        deadline = time.monotonic() + 60
        while ping(port)[0] != 200:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("python -m smkit.serving did not start")
            time.sleep(0.05)
        yield port
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


@contextmanager
def _local_endpoint(config: Path) -> Iterator[tuple[str, str]]:
    """``smkit local-endpoint`` in its own process: (gateway URL, endpoint name)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "smkit.cli", "local-endpoint", "--config", str(config), "--port", "0"],
        cwd=config.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "SMKIT_MODEL_ENVS": "false"},
    )
    try:
        banner = ""
        assert proc.stderr is not None
        for line in proc.stderr:
            banner += line
            if "Ctrl-C" in line:
                break
        gateway = re.search(r"on (http://127\.0\.0\.1:\d+)", banner)
        name = re.search(r"local endpoint (\S+)", banner)
        if not (gateway and name):
            raise RuntimeError(f"smkit local-endpoint did not start:\n{banner}")
        threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep draining its log
        yield gateway.group(1), name.group(1)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def _socket_reader(port: int) -> Reader:
    sock = socket.create_connection((LOOPBACK, port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    stream = sock.makefile("rb", buffering=0)

    def read(body: bytes) -> list[float]:
        sock.sendall(
            b"POST /invocations HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        buffered = _Buffered(stream)
        if not buffered.line().startswith(b"HTTP/1.1 200"):
            raise RuntimeError("the stream did not start with 200")
        while buffered.line() != b"\r\n":
            pass
        stamps = []
        while True:
            size = int(buffered.line(), 16)
            if size == 0:
                buffered.line()
                return stamps
            buffered.exact(size + 2)
            stamps.append(time.monotonic())

    return read


class _Buffered:
    """Reads a chunked body as the bytes come (no read-ahead past what the socket has delivered)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.data = b""

    def _fill(self) -> None:
        more = self.stream.read(65536)
        if not more:
            raise RuntimeError("the connection closed mid-stream")
        self.data += more

    def line(self) -> bytes:
        while b"\r\n" not in self.data:
            self._fill()
        line, _, self.data = self.data.partition(b"\r\n")
        return line or b"\r\n"  # the blank line that ends the head (or a chunked body) as itself

    def exact(self, size: int) -> bytes:
        while len(self.data) < size:
            self._fill()
        out, self.data = self.data[:size], self.data[size:]
        return out


def _boto3_reader(url: str, name: str) -> Reader:
    from smkit.client.invoke import runtime_client

    client = runtime_client(endpoint_url=url, region="us-east-1")

    def read(body: bytes) -> list[float]:
        response = client.invoke_endpoint_with_response_stream(
            EndpointName=name, ContentType="application/json", Body=body
        )
        stamps = []
        for event in response["Body"]:
            if "PayloadPart" in event:
                stamps.append(time.monotonic())
        return stamps

    return read


def _measure(read: Reader, stamps_file: Path, pause: float, requests: int) -> dict[str, float]:
    body = json.dumps({"chunks": CHUNKS, "size": CHUNK_BYTES, "pause": pause, "stamps": str(stamps_file)})
    first: list[float] = []
    per_chunk: list[float] = []
    latency: list[float] = []
    for index in range(requests + 3):
        client = read(body.encode())
        handler = json.loads(stamps_file.read_text())
        if len(client) != CHUNKS or len(handler) != CHUNKS:
            raise RuntimeError(f"expected {CHUNKS} chunks, got {len(client)} (handler {len(handler)})")
        if index < 3:
            continue  # warm-up
        first.append(client[0] - handler[0])
        per_chunk.append(((client[-1] - client[0]) - (handler[-1] - handler[0])) / (CHUNKS - 1))
        latency.append(statistics.median(c - h for c, h in zip(client, handler, strict=True)))
    return {
        "first_byte_after_first_yield_ms": round(statistics.median(first) * 1000, 3),
        "first_byte_p90_ms": round(sorted(first)[int(0.9 * (len(first) - 1))] * 1000, 3),
        "per_chunk_overhead_ms": round(statistics.median(per_chunk) * 1000, 4),
        "chunk_latency_median_ms": round(statistics.median(latency) * 1000, 3),
    }


def run(requests: int) -> dict[str, Any]:
    report: dict[str, Any] = {"machine": machine_facts(), "chunks": CHUNKS, "chunk_bytes": CHUNK_BYTES}
    with tempfile.TemporaryDirectory(prefix="bench-streaming-") as tmp:
        root = _project(Path(tmp))
        stamps = root / "stamps.json"
        paths: dict[str, Any] = {}
        with _serve(root / "model") as port:
            read = _socket_reader(port)
            paths["serve"] = {
                "paced_1ms": _measure(read, stamps, 0.001, requests),
                "burst": _measure(read, stamps, 0.0, requests),
            }
        with _local_endpoint(root / "endpoint.yaml") as (url, name):
            read = _boto3_reader(url, name)
            paths["local_endpoint_boto3"] = {
                "paced_1ms": _measure(read, stamps, 0.001, requests),
                "burst": _measure(read, stamps, 0.0, requests),
            }
        report["paths"] = paths
    report["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    serve = paths["serve"]
    report["targets"] = {
        "first_byte_within_5ms_of_first_yield": serve["paced_1ms"]["first_byte_after_first_yield_ms"] <= 5.0,
        "per_chunk_overhead_below_0.2ms": serve["burst"]["per_chunk_overhead_ms"] < 0.2,
    }
    return report


def _table(report: dict[str, Any]) -> str:
    rows = [
        "| path | handler | first byte after first yield, median (p90) ms | per-chunk overhead ms | "
        "chunk delivery latency, median ms |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for path, modes in report["paths"].items():
        for mode, m in modes.items():
            rows.append(
                f"| {path} | {mode} | {m['first_byte_after_first_yield_ms']} ({m['first_byte_p90_ms']}) | "
                f"{m['per_chunk_overhead_ms']} | {m['chunk_latency_median_ms']} |"
            )
    machine = report["machine"]
    rows.append("")
    rows.append(
        f"{report['chunks']} chunks of {report['chunk_bytes']} bytes; load average "
        f"{machine['loadavg_at_start']} at start, {report['loadavg_at_end']} at end; nice {machine['nice']}; "
        f"targets (smkit serve): {report['targets']}"
    )
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.streaming", description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=30, help="measured streams per path and mode")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "streaming.json")
    parser.add_argument("--nice", type=int, default=0, help="nice value (e.g. -10 as root)")
    parser.add_argument("--no-markdown", action="store_true", help="do not update BENCHMARKS.md")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    apply_niceness(args.nice)
    report = run(args.requests)
    write_json(args.out, report)
    table = _table(report)
    print(table)
    if not args.no_markdown:
        replace_section(BENCHMARKS_MD, "streaming", table)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
