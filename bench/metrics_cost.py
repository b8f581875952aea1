"""What recording a request's metrics costs, two ways: the worker protocol (smkit's) vs prometheus_client's
multiprocess mode.

    python -m bench.metrics_cost            # writes bench/results/metrics_cost.json + BENCHMARKS.md

Per answered request the runtime records one counter and five histogram observations (total duration,
queue wait, input_fn, predict_fn, output_fn). Measured, in one process each, CPU per request of:

- **worker protocol, own accumulators** (what the runtime does): the worker packs its phase times into the
  reply's frame (``smkit.serving.wire.ipc.TIMINGS``) and the front end unpacks them and counts them into plain
  lists (:meth:`smkit.serving.front.metrics.Metrics.record`); the exposition goes through prometheus_client.
- **worker protocol, prometheus_client objects**: the same, observing into ``Counter``/``Histogram`` children.
- **multiprocess mode**: each worker observes into prometheus_client's metrics backed by mmap files
  (``PROMETHEUS_MULTIPROC_DIR``); the front end reads every worker's files at each scrape.

Also the CPU of one scrape of each after 100,000 requests from 2 workers. The end-to-end cost (server CPU
per request with metrics on vs off) is ``make bench-serving``'s (``bench/serving.py``, server
``smkit-metrics-off``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import BENCHMARKS_MD, RESULTS_DIR, machine_facts, replace_section, write_json

PHASES = (0.00012, 0.0003, 0.0009, 0.00008)  # a fast model's queue wait, input_fn, predict_fn, output_fn

MULTIPROCESS_WORKER = r"""
import os, sys, time
from prometheus_client import Counter, Histogram
from smkit.serving.front.metrics import LATENCY_BUCKETS
n = int(sys.argv[1])
requests = Counter("smkit_requests", "r", ["route", "status", "model"])
duration = Histogram("smkit_request_duration_seconds", "d", ["route", "model"], buckets=LATENCY_BUCKETS)
phase = Histogram("smkit_request_phase_seconds", "p", ["phase", "model"], buckets=LATENCY_BUCKETS)
children = [phase.labels(p, "") for p in ("queue_wait", "input_fn", "predict_fn", "output_fn")]
count, total = requests.labels("/invocations", "200", ""), duration.labels("/invocations", "")
values = (0.00012, 0.0003, 0.0009, 0.00008)
start = time.process_time()
for _ in range(n):
    count.inc()
    total.observe(0.0015)
    for child, value in zip(children, values):
        child.observe(value)
print(1e6 * (time.process_time() - start) / n)
"""


class _Request:
    __slots__ = ("path", "headers")

    def __init__(self) -> None:
        self.path = "/invocations"
        self.headers: list[tuple[bytes, bytes]] = [(b"content-type", b"text/csv")]


def own_accumulators(n: int) -> tuple[float, float, float]:
    """(front end us per request, worker us per request, scrape ms) of the runtime's own way."""
    from smkit.serving.front.metrics import Metrics
    from smkit.serving.wire import ipc

    class _Pool:
        workers: list[Any] = []
        jobs: dict[int, Any] = {}
        options = type("O", (), {"queue_size": 100})()
        life = type("L", (), {"slots": []})()
        pinning = type("P", (), {"any_adapters": False})()

    front = type("F", (), {"pool": _Pool(), "sessions": None})()
    metrics = Metrics(front, multi_model=False, max_models=32, path="/metrics")  # type: ignore[arg-type]
    request = _Request()
    timings = (PHASES[0], PHASES[1], PHASES[2], PHASES[3], 0)
    start = time.process_time()
    for i in range(n):
        meta = ipc.reply_meta(i, 200, "application/json", {}, 123, timings)
    worker = 1e6 * (time.process_time() - start) / n
    start = time.process_time()
    for i in range(n):
        meta = ipc.reply_meta(i, 200, "application/json", {}, 123)
    worker -= 1e6 * (time.process_time() - start) / n  # the frame without timings is the baseline
    record = metrics.record
    unpack = ipc.reply_timings
    start = time.process_time()
    for _ in range(n):
        record(request, 200, unpack(meta), 0.0015)  # type: ignore[arg-type]
    front_us = 1e6 * (time.process_time() - start) / n
    start = time.process_time()
    for _ in range(20):
        metrics.registry.collect()
        from prometheus_client import generate_latest

        generate_latest(metrics.registry)
    scrape_ms = 1e3 * (time.process_time() - start) / 20
    return front_us, worker, scrape_ms


def client_objects(n: int) -> float:
    """Front end us per request observing into prometheus_client's own Counter and Histogram children."""
    from prometheus_client import CollectorRegistry, Counter, Histogram

    from smkit.serving.front.metrics import LATENCY_BUCKETS
    from smkit.serving.wire import ipc

    registry = CollectorRegistry()
    requests = Counter("r", "r", ["route", "status", "model"], registry=registry)
    duration = Histogram("d", "d", ["route", "model"], buckets=LATENCY_BUCKETS, registry=registry)
    phase = Histogram("p", "p", ["phase", "model"], buckets=LATENCY_BUCKETS, registry=registry)
    children = [phase.labels(p, "") for p in ("queue_wait", "input_fn", "predict_fn", "output_fn")]
    meta = ipc.reply_meta(1, 200, "application/json", {}, 123, (*PHASES, 0))
    start = time.process_time()
    for _ in range(n):
        requests.labels("/invocations", "200", "").inc()
        duration.labels("/invocations", "").observe(0.0015)
        for child, value in zip(children, ipc.reply_timings(meta), strict=False):
            if not math.isnan(value):
                child.observe(value)
    return 1e6 * (time.process_time() - start) / n


def multiprocess(n: int, workers: int = 2) -> tuple[float, float]:
    """(worker us per request, scrape ms) of prometheus_client's multiprocess mode."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.multiprocess import MultiProcessCollector

    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": folder}
        costs = []
        for _ in range(workers):
            done = subprocess.run(
                [sys.executable, "-c", MULTIPROCESS_WORKER, str(n)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            costs.append(float(done.stdout.strip()))
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=folder)
        start = time.process_time()
        for _ in range(20):
            generate_latest(registry)
        scrape_ms = 1e3 * (time.process_time() - start) / 20
    return sum(costs) / len(costs), scrape_ms


def markdown(result: dict[str, Any]) -> str:
    rows = result["rows"]
    lines = [
        f"Measured {result['generated_at']} on {result['machine']['cpus']} cores (load average "
        f"{result['machine']['loadavg_at_start']} at start), {result['requests']:,} requests per way, "
        "one counter and five histogram observations per request.",
        "",
        "| way | front end CPU/request (us) | worker CPU/request (us) | one scrape after the run (ms) |",
        "| --- | ---: | ---: | ---: |",
    ]
    for row in rows:
        lines.append(f"| {row['way']} | {row['front_us']} | {row['worker_us']} | {row['scrape_ms']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.metrics_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "metrics_cost.json")
    parser.add_argument("--no-markdown", action="store_true")
    args = parser.parse_args(argv)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    machine = machine_facts()
    front, worker, scrape = own_accumulators(args.requests)
    objects = client_objects(args.requests)
    mp_worker, mp_scrape = multiprocess(args.requests)
    rows = [
        {
            "way": "worker protocol, own accumulators (the runtime's)",
            "front_us": round(front, 2),
            "worker_us": round(worker, 2),
            "scrape_ms": round(scrape, 2),
        },
        {
            "way": "worker protocol, prometheus_client Counter/Histogram",
            "front_us": round(objects, 2),
            "worker_us": round(worker, 2),
            "scrape_ms": None,
        },
        {
            "way": "prometheus_client multiprocess mode (mmap files)",
            "front_us": 0.0,
            "worker_us": round(mp_worker, 2),
            "scrape_ms": round(mp_scrape, 2),
        },
    ]
    result = {"generated_at": started, "machine": machine, "requests": args.requests, "rows": rows}
    write_json(args.out, result)
    table = markdown(result)
    print(table)
    if not args.no_markdown:
        replace_section(BENCHMARKS_MD, "metrics-cost", table)
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
