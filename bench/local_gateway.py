"""What the local SageMaker gateway costs per call, against calling the serving container directly.

    python -m bench.local_gateway                           # writes bench/results/local_gateway.json
    python -m bench.local_gateway --requests 200 --out /tmp/gw.json                      # smoke

One local endpoint (config/serverless.yaml: one warm container), run as ``smkit local-endpoint`` in its
own process like a user runs it; the load client is this process. Reference: HTTP straight to the container's
``POST /invocations`` (what the gateway itself does). Compared: the same body through the gateway with a
plain HTTP client (the gateway's own overhead), and through boto3's ``sagemaker-runtime`` client (what an
application sees: boto3's request signing and parsing included). Each path runs sequentially (latency) and
with 8 concurrent callers (throughput). The payload is the tabular example's 10-row CSV sample.
"""

from __future__ import annotations

import argparse
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench.common import REPO_ROOT, RESULTS_DIR, machine_facts, write_json
from smkit.client.invoke import runtime_client

CONFIG = REPO_ROOT / "config" / "serverless.yaml"
PAYLOAD = REPO_ROOT / "model_code" / "tabular" / "samples" / "request.csv"
CONCURRENCY = 8


def _measure(call: Callable[[], None], requests: int, concurrency: int) -> dict[str, float]:
    for _ in range(min(20, requests)):  # warm connections and caches
        call()
    latencies: list[float] = []

    def timed(_: int) -> None:
        started = time.perf_counter()
        call()
        latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    if concurrency == 1:
        for i in range(requests):
            timed(i)
    else:
        with ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(timed, range(requests)))
    wall = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "requests": requests,
        "concurrency": concurrency,
        "p50_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
        "requests_per_s": requests / wall,
    }


@contextmanager
def _local_endpoint() -> Iterator[tuple[str, str, str]]:
    """``smkit local-endpoint`` in its own process (as users run it): (gateway URL, container URL, name)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "smkit.cli", "local-endpoint", "--config", str(CONFIG), "--port", "0"],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
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
        yield gateway.group(1), container.group(1), name.group(1)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def run(requests: int) -> dict[str, Any]:
    body = PAYLOAD.read_bytes()
    headers = {"Content-Type": "text/csv", "Accept": "application/json"}
    with _local_endpoint() as (gateway_url, container_url, name):
        direct = httpx.Client(base_url=container_url)
        gateway = httpx.Client(base_url=gateway_url)
        runtime = runtime_client(endpoint_url=gateway_url, region="us-east-1")
        path = f"/endpoints/{name}/invocations"

        def via_container() -> None:
            direct.post("/invocations", content=body, headers=headers).raise_for_status()

        def via_gateway() -> None:
            gateway.post(path, content=body, headers=headers).raise_for_status()

        def via_boto3() -> None:
            runtime.invoke_endpoint(
                EndpointName=name, ContentType="text/csv", Accept="application/json", Body=body
            )["Body"].read()

        paths = {
            "reference: container directly": via_container,
            "gateway (plain HTTP)": via_gateway,
            "gateway (boto3 sagemaker-runtime)": via_boto3,
        }
        results = {
            name: {
                "sequential": _measure(call, requests, 1),
                f"concurrent_{CONCURRENCY}": _measure(call, requests, CONCURRENCY),
            }
            for name, call in paths.items()
        }
    reference = results["reference: container directly"]["sequential"]["p50_ms"]
    overhead = results["gateway (plain HTTP)"]["sequential"]["p50_ms"] - reference
    return {
        "benchmark": "local_gateway",
        "config": str(CONFIG.relative_to(REPO_ROOT)),
        "payload_bytes": len(body),
        "results": results,
        "gateway_overhead_p50_ms": overhead,
        "machine": machine_facts(),
    }


def _table(report: dict[str, Any]) -> str:
    lines = [f"{'path':<36} {'mode':<14} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>8}"]
    for name, modes in report["results"].items():
        for mode, stats in modes.items():
            lines.append(
                f"{name:<36} {mode:<14} {stats['p50_ms']:8.2f} {stats['p99_ms']:8.2f} {stats['requests_per_s']:8.1f}"
            )
    lines.append(f"gateway overhead (p50, sequential): {report['gateway_overhead_p50_ms']:.2f} ms")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.local_gateway", description=__doc__)
    parser.add_argument("--requests", type=int, default=1000, help="requests per path and mode")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "local_gateway.json")
    args = parser.parse_args(argv)
    report = run(args.requests)
    write_json(args.out, report)
    print(_table(report))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
