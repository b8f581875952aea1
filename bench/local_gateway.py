"""What the local SageMaker gateway costs per call, against calling the serving container directly.

    python -m bench.local_gateway                  # writes bench/results/local_gateway.json and BENCHMARKS.md
    python -m bench.local_gateway --requests 300 --no-markdown --out /tmp/gw.json                  # smoke

One endpoint (one realtime variant, one container with 2 model workers) whose handler returns the request
body as it is (a pass-through model: the model's own time is nothing, so every difference is transport).
``smkit local-endpoint`` runs it in its own process, as users run it; the load clients are this process.
Two gateways in the same run, one after the other: this source tree's, and the baseline's (the commit
``--baseline`` names, exported with ``git archive`` and imported in place of this tree). For each:

- **container directly**: a raw keep-alive HTTP/1.1 client (httptools' parser, one connection per caller)
  posting to the container's ``/invocations`` (the reference; the same container code for both gateways).
- **gateway, raw client**: the same client posting InvokeEndpoint to the gateway (the gateway's own cost).
- **gateway, boto3**: boto3's ``sagemaker-runtime`` client (what an application sees), one client and one
  thread per caller. Its own CPU per call (signing, serializing, parsing) is reported separately as this
  process's CPU per call minus the raw client's.

Each path runs at 1 caller (latency) and 8 callers (throughput), in ``--rounds`` rounds of the three paths one
after the other; every figure is the median of the rounds (two cores shared by the client, the gateway, the
container and its workers give runs of the same code that differ by a third). The gateway's CPU per request is its
process's CPU time (``/proc/PID/task/*/schedstat``, every thread of the gateway process, none of the
containers') over the raw 8-caller run, divided by the requests. Targets: gateway CPU per request
<= 0.5 ms; raw throughput through the gateway >= 0.5x direct at 8 callers; p50 at 1 caller <= direct +
0.5 ms.

Where valgrind is installed, each gateway is also run once under callgrind and the user-space instructions
its process executes per relayed call (raw client, 8 callers) are counted: a figure that does not move with
the machine's load, for comparing two versions of the gateway's code.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httptools

from bench.common import (
    BENCHMARKS_MD,
    REPO_ROOT,
    RESULTS_DIR,
    apply_niceness,
    exit_on_sigterm,
    export_tree,
    machine_facts,
    replace_section,
    write_json,
)
from smkit.client.invoke import runtime_client

# The last commit whose gateway ran on Starlette, uvicorn and httpx.
BASELINE = "57131468db503b9fe1e04bc725c43cdca8df97f2"
CONCURRENCY = 8
INSTRUCTION_CALLS = 1000  # calls counted under callgrind (about 50 times slower than without)
WORKERS = 2
PAYLOAD = REPO_ROOT / "model_code" / "tabular" / "samples" / "request.csv"
HANDLER = """
def model_fn(model_dir):
    return None


def transform_fn(model, data, content_type, accept):
    return data, content_type
"""
CONFIG = """
name: bench-gateway
image: {source: build, context: ., dockerfile: Dockerfile}
model:
  containers:
    - name: passthrough
      model_data: {source: prefix, path: model}
endpoint:
  type: realtime
  variants:
    - {name: main, instance_type: ml.m5.large, initial_instance_count: 1, initial_weight: 1}
"""
TARGETS = {"gateway_cpu_per_request_ms": 0.5, "throughput_ratio_c8": 0.5, "p50_over_direct_c1_ms": 0.5}


def _project(root: Path) -> Path:
    (root / "model" / "code").mkdir(parents=True)
    (root / "model" / "code" / "inference.py").write_text(textwrap.dedent(HANDLER))
    (root / "Dockerfile").write_text("FROM python:3.11-slim\n")
    (root / "endpoint.yaml").write_text(CONFIG)
    return root / "endpoint.yaml"


class Gateway:
    """``smkit local-endpoint`` in its own process (as users run it), smkit imported from ``tree``."""

    def __init__(self, proc: subprocess.Popen[str], gateway: str, container: str, name: str) -> None:
        self.proc = proc
        self.gateway = gateway
        self.container = container
        self.name = name

    def cpu_ns(self) -> int:
        """Nanoseconds on a CPU so far, summed over the gateway process's threads (not its containers)."""
        total = 0
        for stat in Path(f"/proc/{self.proc.pid}/task").glob("*/schedstat"):
            with suppress(OSError, ValueError):
                total += int(stat.read_text().split()[0])
        return total


@contextmanager
def _local_endpoint(config: Path, tree: Path, wrapper: Sequence[str] = ()) -> Iterator[Gateway]:
    """``smkit local-endpoint`` of ``config`` with smkit imported from ``tree`` (run under ``wrapper``)."""
    proc = subprocess.Popen(
        [
            *wrapper,
            sys.executable,
            "-m",
            "smkit.cli",
            "local-endpoint",
            "--config",
            str(config),
            "--port",
            "0",
        ]
        + ["--workers", str(WORKERS), "--python", sys.executable],
        cwd=config.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tree), "SMKIT_ACCESS_LOG": "false"},
    )
    try:
        banner = ""
        assert proc.stderr is not None
        for line in proc.stderr:
            banner += line
            if "Ctrl-C" in line:
                break
        gateway = re.search(r"on (http://127\.0\.0\.1:\d+)", banner)
        container = re.search(r"pid \d+ at (http://127\.0\.0\.1:\d+)", banner)
        name = re.search(r"local endpoint (\S+)", banner)
        if not (gateway and container and name):
            raise RuntimeError(f"smkit local-endpoint did not start:\n{banner}")
        threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep draining its log
        yield Gateway(proc, gateway.group(1), container.group(1), name.group(1))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def _stats(latencies: list[float], wall: float, cpu: float, extra: dict[str, float]) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "requests": len(ordered),
        "p50_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
        "requests_per_s": len(ordered) / wall,
        "client_cpu_per_request_ms": cpu / len(ordered) * 1000,
        **extra,
    }


class _Connection(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection of the raw client: a request written, its response parsed."""

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.done: asyncio.Future[int] | None = None
        self.body = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports subclass none of asyncio's

    def data_received(self, data: bytes) -> None:
        self.parser.feed_data(data)

    def on_body(self, body: bytes) -> None:
        self.body += len(body)

    def on_message_complete(self) -> None:
        assert self.done is not None
        self.done.set_result(self.parser.get_status_code())

    def connection_lost(self, exc: Exception | None) -> None:
        if self.done is not None and not self.done.done():
            self.done.set_exception(ConnectionError("the server closed the connection"))

    async def call(self, request: bytes) -> int:
        assert self.transport is not None
        self.done = asyncio.get_running_loop().create_future()
        self.body = 0
        self.transport.write(request)
        return await self.done


def _raw(url: str, path: str, body: bytes, requests: int, concurrency: int) -> dict[str, float]:
    """``requests`` POSTs of ``body`` to ``url + path`` from ``concurrency`` keep-alive connections."""
    target = urlsplit(url)
    request = (
        f"POST {path} HTTP/1.1\r\nHost: {target.netloc}\r\nContent-Type: text/csv\r\n"
        f"Accept: text/csv\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body

    async def main() -> dict[str, float]:
        loop = asyncio.get_running_loop()
        connections = []
        for _ in range(concurrency):
            transport, conn = await loop.create_connection(_Connection, target.hostname, target.port)
            conn.transport = transport
            connections.append(conn)
        for conn in connections:  # warm
            for _ in range(5):
                if await conn.call(request) != 200:
                    raise RuntimeError(f"POST {url}{path} did not answer 200")
        latencies: list[float] = []
        left = [requests]

        async def caller(conn: _Connection) -> None:
            while left[0] > 0:
                left[0] -= 1
                started = time.perf_counter()
                status = await conn.call(request)
                latencies.append(time.perf_counter() - started)
                if status != 200:
                    raise RuntimeError(f"POST {url}{path} answered {status}")

        cpu, started = time.process_time(), time.perf_counter()
        await asyncio.gather(*(caller(conn) for conn in connections))
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        for conn in connections:
            assert conn.transport is not None
            conn.transport.close()
        return _stats(latencies, wall, cpu, {"concurrency": concurrency})

    try:
        import uvloop

        return uvloop.run(main())
    except ImportError:
        return asyncio.run(main())


def _boto3(url: str, name: str, body: bytes, requests: int, concurrency: int) -> dict[str, float]:
    clients = [runtime_client(endpoint_url=url, region="us-east-1") for _ in range(concurrency)]
    local = threading.local()
    pool = iter(clients)
    lock = threading.Lock()

    def call() -> None:
        if not hasattr(local, "client"):
            with lock:
                local.client = next(pool)
        local.client.invoke_endpoint(EndpointName=name, ContentType="text/csv", Accept="text/csv", Body=body)[
            "Body"
        ].read()

    latencies: list[float] = []

    def timed(_: int) -> None:
        started = time.perf_counter()
        call()
        latencies.append(time.perf_counter() - started)

    with ThreadPoolExecutor(concurrency) as executor:
        list(executor.map(lambda _: call(), range(concurrency * 5)))  # warm every client
        latencies.clear()
        cpu, started = time.process_time(), time.perf_counter()
        list(executor.map(timed, range(requests)))
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    return _stats(latencies, wall, cpu, {"concurrency": concurrency})


def _instructions(config: Path, tree: Path, body: bytes, requests: int) -> float | None:
    """User-space instructions the gateway process executes per relayed call at 8 callers, counted by
    valgrind's callgrind (None where valgrind is not installed).

    A count, not a time: the same code gives the same figure on a busy or a quiet machine, where its CPU
    time on a shared VM moves by a third between runs. Only the measured calls are counted (callgrind's
    instrumentation is switched on after a warm-up and off after them); the containers run outside valgrind.
    """
    valgrind, control = shutil.which("valgrind"), shutil.which("callgrind_control")
    if valgrind is None or control is None:
        return None
    with tempfile.TemporaryDirectory(prefix="bench-gateway-callgrind-") as tmp:
        out = Path(tmp) / "callgrind.out"
        wrapper = [valgrind, "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
        with _local_endpoint(config, tree, wrapper) as gateway:
            path = f"/endpoints/{gateway.name}/invocations"
            _raw(gateway.gateway, path, body, 300, CONCURRENCY)
            pid = str(gateway.proc.pid)
            subprocess.run([control, "--instr=on", pid], check=True, capture_output=True)
            _raw(gateway.gateway, path, body, requests, CONCURRENCY)
            subprocess.run([control, "--instr=off", pid], check=True, capture_output=True)
            subprocess.run([control, "--dump", pid], check=True, capture_output=True)
        counted = [
            int(line.split()[1])
            for dump in Path(tmp).glob("callgrind.out*")
            for line in dump.read_text().splitlines()
            if line.startswith("totals:")
        ]
    return max(counted, default=0) / requests


def _median_round(rounds: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's median over the rounds (a gateway row's ``throughput_vs_direct`` and
    ``p50_over_direct_ms`` pair it with the direct run of its own round, so a slower or faster spell of the
    machine cancels out)."""
    return {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}


def _measure_gateway(gateway: Gateway, body: bytes, requests: int, rounds: int) -> dict[str, Any]:
    path = f"/endpoints/{gateway.name}/invocations"
    result: dict[str, Any] = {}
    for mode, concurrency in (("c1", 1), (f"c{CONCURRENCY}", CONCURRENCY)):
        runs: dict[str, list[dict[str, float]]] = {
            "container directly": [],
            "gateway, raw client": [],
            "gateway, boto3": [],
        }
        for _ in range(rounds):  # the three paths one after the other in each round
            direct = _raw(gateway.container, "/invocations", body, requests, concurrency)
            before = gateway.cpu_ns()
            raw = _raw(gateway.gateway, path, body, requests, concurrency)
            raw["gateway_cpu_per_request_ms"] = (gateway.cpu_ns() - before) / requests / 1e6
            raw["throughput_vs_direct"] = raw["requests_per_s"] / direct["requests_per_s"]
            raw["p50_over_direct_ms"] = raw["p50_ms"] - direct["p50_ms"]
            before = gateway.cpu_ns()
            boto = _boto3(gateway.gateway, gateway.name, body, requests, concurrency)
            boto["gateway_cpu_per_request_ms"] = (gateway.cpu_ns() - before) / requests / 1e6
            boto["boto3_cpu_per_request_ms"] = (
                boto["client_cpu_per_request_ms"] - raw["client_cpu_per_request_ms"]
            )
            for name, stats in (
                ("container directly", direct),
                ("gateway, raw client", raw),
                ("gateway, boto3", boto),
            ):
                runs[name].append(stats)
        result[mode] = {name: _median_round(stats) for name, stats in runs.items()}
    return result


def _verdict(result: dict[str, Any]) -> dict[str, Any]:
    c1, c8 = result["c1"], result[f"c{CONCURRENCY}"]
    cpu = c8["gateway, raw client"]["gateway_cpu_per_request_ms"]
    ratio = c8["gateway, raw client"]["throughput_vs_direct"]
    over = c1["gateway, raw client"]["p50_over_direct_ms"]
    return {
        "gateway_cpu_per_request_ms": cpu,
        "throughput_ratio_c8": ratio,
        "p50_over_direct_c1_ms": over,
        "boto3_cpu_per_request_ms": c1["gateway, boto3"]["boto3_cpu_per_request_ms"],
        "met": {
            "gateway_cpu_per_request_ms": cpu <= TARGETS["gateway_cpu_per_request_ms"],
            "throughput_ratio_c8": ratio >= TARGETS["throughput_ratio_c8"],
            "p50_over_direct_c1_ms": over <= TARGETS["p50_over_direct_c1_ms"],
        },
    }


def run(requests: int, baseline: str, rounds: int) -> dict[str, Any]:
    body = PAYLOAD.read_bytes()
    report: dict[str, Any] = {
        "benchmark": "local_gateway",
        "model": f"pass-through handler, 1 container, {WORKERS} model workers",
        "payload_bytes": len(body),
        "requests_per_path": requests,
        "rounds": rounds,
        "baseline": baseline,
        "machine": machine_facts(),
        "gateways": {},
    }
    with tempfile.TemporaryDirectory(prefix="bench-gateway-") as tmp:
        config = _project(Path(tmp) / "project")
        trees = {
            "this tree": REPO_ROOT,
            f"baseline {baseline[:7]}": export_tree(baseline, Path(tmp) / "baseline"),
        }
        for label, tree in trees.items():
            with _local_endpoint(config, tree) as gateway:
                result = _measure_gateway(gateway, body, requests, rounds)
            report["gateways"][label] = {
                "paths": result,
                "verdict": _verdict(result),
                "instructions_per_call": _instructions(config, tree, body, INSTRUCTION_CALLS),
            }
    report["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    return report


def _table(report: dict[str, Any]) -> str:
    lines = [
        f"Pass-through model, {WORKERS} model workers, {report['payload_bytes']}-byte CSV body, "
        f"{report['requests_per_path']} requests per path in each of {report['rounds']} rounds (each figure is "
        "the median of the rounds; a gateway's throughput and p50 are compared with the direct run of the same "
        "round); load average "
        f"{report['machine']['loadavg_at_start']} at the start, {report['loadavg_at_end']} at the end.",
        "",
        "| gateway | callers | path | p50 ms | p99 ms | req/s | gateway CPU/req ms | client CPU/req ms |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for label, entry in report["gateways"].items():
        for paths in entry["paths"].values():
            for path, stats in paths.items():
                gateway_cpu = stats.get("gateway_cpu_per_request_ms")
                shown = f"{gateway_cpu:.2f}" if gateway_cpu is not None else ""
                lines.append(
                    f"| {label} | {stats['concurrency']} | {path} | {stats['p50_ms']:.2f} | {stats['p99_ms']:.2f} "
                    f"| {stats['requests_per_s']:.0f} | {shown} | {stats['client_cpu_per_request_ms']:.2f} |"
                )
    lines += [
        "",
        "| gateway | gateway CPU/req ms (<= 0.5) | raw req/s vs direct, 8 callers (>= 0.5) "
        "| p50 over direct, 1 caller, ms (<= 0.5) | boto3's own CPU/call ms | gateway instructions/call |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, entry in report["gateways"].items():
        v = entry["verdict"]
        counted = entry.get("instructions_per_call")
        instructions = f"{counted:,.0f}" if counted else "(no valgrind)"
        lines.append(
            f"| {label} | {v['gateway_cpu_per_request_ms']:.2f} | {v['throughput_ratio_c8']:.2f} "
            f"| {v['p50_over_direct_c1_ms']:.2f} | {v['boto3_cpu_per_request_ms']:.2f} | {instructions} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.local_gateway", description=__doc__)
    parser.add_argument(
        "--requests", type=int, default=2000, help="requests per path, caller count and round"
    )
    parser.add_argument(
        "--rounds", type=int, default=5, help="rounds of the three paths, one after the other"
    )
    parser.add_argument("--baseline", default=BASELINE, help="commit whose gateway is measured alongside")
    parser.add_argument("--nice", type=int, default=0, help="run at this nice value (negative: root only)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "local_gateway.json")
    parser.add_argument("--no-markdown", action="store_true", help="do not update BENCHMARKS.md")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    apply_niceness(args.nice)
    report = run(args.requests, args.baseline, args.rounds)
    write_json(args.out, report)
    table = _table(report)
    print(table)
    if not args.no_markdown:
        replace_section(BENCHMARKS_MD, "local-gateway", table)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
