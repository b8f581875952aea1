"""Soak: 20,000 requests at concurrency 16 against smkit serving the example model.

    python -m bench.soak                   # full run: writes bench/results/soak.json + BENCHMARKS.md
    python -m bench.soak --requests 20 --concurrency 2 --out smoke.json --no-markdown   # smoke

Pass criteria: 0 errors and resident memory of the whole server process tree growing by less
than 10% between the end of warm-up and the end of the run. RSS is also sampled every 0.5 s during the
run so a slow leak shows as a trend, not only as two points. After the run one model worker is killed
with SIGKILL: a fresh worker must take its place and the next requests must all be answered 200 (issue
10). Exit status 1 when a criterion fails.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

from bench.common import (
    LOOPBACK,
    PORTS_BELOW,
    RESULTS_DIR,
    BenchError,
    ManagedServer,
    add_output_options,
    run_benchmark,
    running,
    smkit_spec,
)
from bench.envs import resolve_smkit_python
from bench.example_model import DEFAULT_MODEL, DEFAULT_PAYLOAD, extract_model, load_payload
from bench.load import Request, closed_loop, invoke_once
from smkit.process import free_port

MAX_RSS_GROWTH = 0.10
SAMPLE_EVERY_S = 0.5


def sample_rss(
    server_rss: Any, stop: threading.Event, samples: list[tuple[float, int]], began: float
) -> None:
    """Append (seconds since start, RSS bytes) every SAMPLE_EVERY_S until ``stop`` is set."""
    while not stop.wait(SAMPLE_EVERY_S):
        samples.append((round(time.perf_counter() - began, 2), server_rss()))


def crash_a_worker(server: ManagedServer, request: Request, answer: bytes, after: int = 20) -> dict[str, Any]:
    """SIGKILL one model worker; wait for its replacement; send ``after`` requests that must all get 200."""
    front = psutil.Process(server.process.pid)

    def workers() -> set[int]:
        found = set()
        for child in front.children():
            try:  # the killed worker can be reaped between children() and status()
                # The worker template (smkit/serving/template.py) is a child too, but no worker.
                if child.status() != psutil.STATUS_ZOMBIE and child.name() != "smkit-template":
                    found.add(child.pid)
            except psutil.NoSuchProcess:
                continue
        return found

    before = workers()
    victim = min(before)
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + 120
    while (victim in (now := workers()) or len(now) < len(before)) and time.monotonic() < deadline:
        time.sleep(0.05)
    replaced = victim not in now and len(now) == len(before)
    statuses = [invoke_once(server.port, request) for _ in range(after)]
    good = sum(1 for status, body in statuses if status == 200 and body == answer)
    return {
        "killed_pid": victim,
        "workers_after": sorted(now),
        "replaced": replaced,
        "requests_after": after,
        "ok_after": good,
    }


def soak(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Run the soak once and return the result document."""
    body = load_payload(args.payload, args.rows)
    model_dir = extract_model(args.model, work / "model")
    request = Request(
        "POST", "/invocations", body, {"Content-Type": "text/csv", "Accept": "application/json"}
    )
    port = free_port(LOOPBACK, below=PORTS_BELOW)
    python = resolve_smkit_python(args.smkit_python, model_dir)
    spec = smkit_spec(
        name="smkit-soak", python=python, args=["--model", str(model_dir)], port=port, workers=args.workers
    )
    with running(spec, work / "logs") as server:
        status, answer = invoke_once(port, request)
        if status != 200:
            raise BenchError(f"first invocation answered {status}: {answer[:300]!r}\n{server.log_tail()}")
        closed_loop(port, request, total=args.warmup, concurrency=args.concurrency, expect_body=answer)
        rss_start = server.rss_bytes()
        pids_start = sorted(p.pid for p in server.processes())
        cpu_start = server.cpu_by_pid()
        samples: list[tuple[float, int]] = [(0.0, rss_start)]
        stop = threading.Event()
        began = time.perf_counter()
        sampler = threading.Thread(
            target=sample_rss, args=(server.rss_bytes, stop, samples, began), daemon=True
        )
        sampler.start()
        try:
            result = closed_loop(
                port, request, total=args.requests, concurrency=args.concurrency, expect_body=answer
            )
        finally:
            stop.set()
            sampler.join()
        rss_end = server.rss_bytes()
        cpu_spent = {pid: round(cpu - cpu_start.get(pid, 0.0), 2) for pid, cpu in server.cpu_by_pid().items()}
        pids_end = sorted(p.pid for p in server.processes())
        crash = crash_a_worker(server, request, answer)
    growth = (rss_end - rss_start) / rss_start
    crash_ok = crash["replaced"] and crash["ok_after"] == crash["requests_after"]
    return {
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": args.machine,
        "config": {
            "requests": args.requests,
            "concurrency": args.concurrency,
            "workers": args.workers,
            "warmup_requests": args.warmup,
            "payload_bytes": len(body),
            "smkit_python": args.smkit_python,
        },
        "errors": result.errors,
        "status_counts": result.status_counts,
        "error_samples": result.error_samples,
        "wall_s": result.wall_s,
        "throughput_rps": result.throughput_rps,
        "p50_ms": result.p50_ms,
        "p99_ms": result.p99_ms,
        "max_ms": result.max_ms,
        "rss_mb_start": round(rss_start / 2**20, 2),
        "rss_mb_end": round(rss_end / 2**20, 2),
        "rss_growth": round(growth, 4),
        "rss_mb_samples": [(t, round(b / 2**20, 1)) for t, b in samples],
        "server_cpu_s_by_pid": cpu_spent,
        "server_cpu_us_per_request": round(1e6 * sum(cpu_spent.values()) / args.requests, 1),
        "server_pids_start": pids_start,
        "server_pids_end": pids_end,
        "criteria": {
            "zero_errors": {"value": result.errors, "met": result.errors == 0},
            "rss_growth_under_10pct": {"value": round(growth, 4), "met": growth < MAX_RSS_GROWTH},
            "crashed_worker_replaced": {"value": crash, "met": crash_ok},
        },
        "passed": result.errors == 0 and growth < MAX_RSS_GROWTH and crash_ok,
    }


def markdown(result: dict[str, Any]) -> str:
    """The soak table BENCHMARKS.md shows."""
    cfg = result["config"]
    verdict = "pass" if result["passed"] else "FAIL"
    return "\n".join(
        [
            f"Measured {result['generated_at']}: {cfg['requests']} requests at concurrency {cfg['concurrency']}, "
            f"{cfg['workers']} workers, after {cfg['warmup_requests']} warm-up requests "
            f"({result['machine']['cpus']} shared cores, "
            f"load average at start {result['machine']['loadavg_at_start']}).",
            "",
            "| requests | errors | throughput (req/s) | p50 (ms) | p99 (ms) | RSS start (MiB) | RSS end (MiB) "
            "| RSS growth | killed worker replaced, next 20 answered | result |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :---: | :---: |",
            f"| {cfg['requests']} | {result['errors']} | {result['throughput_rps']:.0f} | {result['p50_ms']:.2f} | "
            f"{result['p99_ms']:.2f} | {result['rss_mb_start']:.1f} | {result['rss_mb_end']:.1f} | "
            f"{100 * result['rss_growth']:+.2f}% | "
            f"{'yes' if result['criteria']['crashed_worker_replaced']['met'] else 'no'} | {verdict} |",
        ]
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.splitlines()[0])
    p.add_argument(
        "--model", type=Path, default=DEFAULT_MODEL, help="model.tar.gz (default build/model.tar.gz)"
    )
    p.add_argument("--payload", type=Path, default=DEFAULT_PAYLOAD, help="CSV body of 10 rows")
    p.add_argument("--rows", type=int, default=10, help="rows the payload must have (default 10)")
    p.add_argument("--requests", type=int, default=20_000, help="requests in the soak (default 20000)")
    p.add_argument("--concurrency", type=int, default=16, help="virtual users (default 16)")
    p.add_argument("--workers", type=int, default=2, help="server worker processes (default 2)")
    p.add_argument("--warmup", type=int, default=500, help="requests before the start RSS is taken")
    add_output_options(p, out=RESULTS_DIR / "soak.json")
    args = p.parse_args(argv)
    if args.requests < args.concurrency or args.concurrency < 1:
        p.error(f"--requests {args.requests} must be >= --concurrency {args.concurrency} >= 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return run_benchmark("soak", parse_args(argv), soak, markdown)


if __name__ == "__main__":
    sys.exit(main())
