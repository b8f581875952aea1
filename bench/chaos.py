"""Chaos: 20,000 requests at concurrency 16 while model workers are killed, against smkit serving the example.

    python -m bench.chaos                  # full run: writes bench/results/chaos.json + BENCHMARKS.md
    python -m bench.chaos --requests 400 --out smoke.json --no-markdown   # smoke

Faults during the run:

- a model worker is killed with SIGKILL every ``--kill-every`` seconds (default 2);
- once, the replacement of a killed worker is killed too while it loads the model (a worker dying during
  a reload: the runtime retries it after its back-off);
- every ``--big-every`` requests (default 2000) a request carries a 7 MiB body, over the 6 MiB realtime
  payload limit;
- a stalled upload every ``--stall-every`` seconds: a client that sends its headers and part of its body,
  then nothing (``SMKIT_BODY_TIMEOUT_SECONDS`` is set to ``--body-timeout``).

Pass criteria: every request answered, each with 200 or a status docs/serving-runtime.md documents for
that fault (500 for a request held by a killed worker, 413 for the 7 MiB body, 408 for the stalled upload,
504 for a request whose deadline passed); 0 hung connections (no request without an answer within the
invocation timeout plus its grace); the slowest ``GET /ping`` answer under 1 s (probed every 50 ms
throughout); resident memory of the server's process tree growing by less than 10 % between the end of
warm-up and the end of the run. Exit status 1 when a criterion fails.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil

from bench.chaos_report import markdown
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
from bench.load import Request, invoke_once, percentile, read_response
from smkit.process import free_port

MAX_RSS_GROWTH = 0.10
MAX_PING_S = 1.0
PING_EVERY_S = 0.05
BIG_BODY = 7 * 2**20
# What each fault is answered with (docs/serving-runtime.md, "Worker faults" and "Timeouts").
DOCUMENTED = {
    "200": "answered",
    "500": "held by a killed worker",
    "413": "7 MiB body",
    "408": "stalled upload",
}
DOCUMENTED_504 = "deadline passed (queued while no worker was ready)"


class Chaos:
    """The fault injectors and probes, each on its own thread until ``stop`` is set."""

    def __init__(self, server: ManagedServer, args: argparse.Namespace) -> None:
        self.server = server
        self.args = args
        self.stop = threading.Event()
        self.front = psutil.Process(server.process.pid)
        self.killed: list[dict[str, Any]] = []
        self.reload_kill: dict[str, Any] | None = None
        self.pings: list[float] = []
        self.ping_statuses: dict[str, int] = {}
        self.stalls: list[str] = []
        self.rss: list[tuple[float, int]] = []
        self.began = time.perf_counter()

    def workers(self) -> set[int]:
        return {c.pid for c in self.front.children() if c.status() != psutil.STATUS_ZOMBIE}

    def killer(self) -> None:
        """SIGKILL a random worker every ``kill_every`` s; once, also its replacement while it loads."""
        rng = random.Random(7)
        while not self.stop.wait(self.args.kill_every):
            before = self.workers()
            if not before:
                continue
            victim = rng.choice(sorted(before))
            os.kill(victim, signal.SIGKILL)
            self.killed.append({"t": round(time.perf_counter() - self.began, 2), "pid": victim})
            if self.reload_kill is None and len(self.killed) >= 3:
                self.reload_kill = self._kill_replacement(before)

    def _kill_replacement(self, known: set[int]) -> dict[str, Any]:
        """Wait for the new worker that replaces the one just killed and kill it before it has loaded."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not self.stop.is_set():
            new = self.workers() - known  # not the victim, which may not be reaped yet
            if new:
                pid = min(new)
                loaded = _model_loaded(pid)
                os.kill(pid, signal.SIGKILL)
                return {"t": round(time.perf_counter() - self.began, 2), "pid": pid, "had_loaded": loaded}
            time.sleep(0.001)
        return {"t": None, "pid": None, "had_loaded": None}

    def pinger(self) -> None:
        """``GET /ping`` every 50 ms on one keep-alive connection; record each answer's latency."""
        raw = f"GET /ping HTTP/1.1\r\nHost: {LOOPBACK}\r\n\r\n".encode()
        sock: socket.socket | None = None
        buf = b""
        while not self.stop.wait(PING_EVERY_S):
            began = time.perf_counter()
            try:
                if sock is None:
                    sock, buf = socket.create_connection((LOOPBACK, self.server.port), timeout=10), b""
                sock.sendall(raw)
                status, _, buf, closes = read_response(sock, buf)
                key = str(status)
                if closes:
                    sock.close()
                    sock = None
            except (OSError, ValueError) as exc:
                key = type(exc).__name__
                if sock is not None:
                    sock.close()
                sock = None
            self.pings.append(time.perf_counter() - began)
            self.ping_statuses[key] = self.ping_statuses.get(key, 0) + 1

    def staller(self) -> None:
        """A stalled upload every ``stall_every`` s: headers and 10 of 1000 body bytes, then silence."""
        while not self.stop.wait(self.args.stall_every):
            try:
                with socket.create_connection((LOOPBACK, self.server.port), timeout=60) as sock:
                    sock.sendall(
                        b"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: text/csv\r\n"
                        b"Content-Length: 1000\r\n\r\n" + b"1" * 10
                    )
                    answer = b""
                    while chunk := sock.recv(65536):
                        answer += chunk
                self.stalls.append(answer[9:12].decode() if answer.startswith(b"HTTP/1.1 ") else "no answer")
            except OSError as exc:
                self.stalls.append(type(exc).__name__)

    def sampler(self) -> None:
        while not self.stop.wait(0.5):
            self.rss.append((round(time.perf_counter() - self.began, 2), self.server.rss_bytes()))


def _model_loaded(pid: int) -> bool | None:
    """Whether a worker has imported the example's libraries yet (its RSS says; None: already gone)."""
    try:
        return psutil.Process(pid).memory_info().rss > 60 * 2**20
    except psutil.Error:
        return None


def mixed_loop(
    port: int, small: bytes, big: bytes, args: argparse.Namespace, expect: bytes
) -> dict[str, Any]:
    """``args.requests`` requests from ``args.concurrency`` keep-alive users, paced to ``args.rate`` per second
    (the example model answers 20,000 requests in a few seconds: unpaced, the run would be over before the
    second kill); every ``big_every``-th request is big."""
    counter = itertools.count()
    latencies: list[float] = []
    statuses: dict[str, int] = {}
    wrong_body = 0
    samples: list[str] = []
    lock = threading.Lock()
    head = f"POST /invocations HTTP/1.1\r\nHost: {LOOPBACK}:{port}\r\nContent-Type: text/csv\r\n"
    raws = [(head + f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1") + body for body in (small, big)]

    def user() -> None:
        nonlocal wrong_body
        sock: socket.socket | None = None
        buf = b""
        while (i := next(counter)) < args.requests:
            raw = raws[1] if i % args.big_every == args.big_every - 1 else raws[0]
            wait = start + i / args.rate - time.perf_counter()  # paced, so the faults span the whole run
            if wait > 0:
                time.sleep(wait)
            began = time.perf_counter()
            try:
                if sock is None:
                    sock, buf = socket.create_connection((LOOPBACK, port), timeout=args.hang_after), b""
                sock.sendall(raw)
                code, payload, buf, closes = read_response(sock, buf)
                key = str(code)
                if code == 200 and payload != expect:
                    with lock:
                        wrong_body += 1
                if code != 200 and len(samples) < 8:
                    samples.append(f"{key}: {payload[:160]!r}")
                if closes:
                    sock.close()
                    sock = None
            except (OSError, ValueError) as exc:
                key = "hung" if isinstance(exc, TimeoutError) else type(exc).__name__
                if len(samples) < 8:
                    samples.append(f"{key}: {exc}")
                if sock is not None:
                    sock.close()
                sock = None
            with lock:
                statuses[key] = statuses.get(key, 0) + 1
                latencies.append(time.perf_counter() - began)

    threads = [threading.Thread(target=user, daemon=True) for _ in range(args.concurrency)]
    start = began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    ordered = sorted(latencies)
    return {
        "wall_s": round(wall, 2),
        "throughput_rps": round(args.requests / wall, 1),
        "status_counts": dict(sorted(statuses.items())),
        "wrong_body": wrong_body,
        "samples": samples,
        "p50_ms": round(percentile(ordered, 50) * 1000, 2),
        "p99_ms": round(percentile(ordered, 99) * 1000, 2),
        "max_ms": round(ordered[-1] * 1000, 2) if ordered else 0.0,
    }


def chaos(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Run the chaos benchmark once and return the result document."""
    small = load_payload(args.payload, args.rows)
    big = b"1," * (BIG_BODY // 2) + b"1"
    model_dir = extract_model(args.model, work / "model")
    port = free_port(LOOPBACK, below=PORTS_BELOW)
    python = resolve_smkit_python(args.smkit_python, model_dir)
    spec = smkit_spec(
        name="smkit-chaos", python=python, args=["--model", str(model_dir)], port=port, workers=args.workers
    )
    spec.env = {**spec.env, "SMKIT_BODY_TIMEOUT_SECONDS": str(args.body_timeout)}
    request = Request("POST", "/invocations", small, {"Content-Type": "text/csv"})
    with running(spec, work / "logs") as server:
        status, expect = invoke_once(port, request)
        if status != 200:
            raise BenchError(f"first invocation answered {status}: {expect[:300]!r}\n{server.log_tail()}")
        for _ in range(args.warmup):
            invoke_once(port, request)
        rss_start = server.rss_bytes()
        injector = Chaos(server, args)
        threads = [
            threading.Thread(target=target, daemon=True)
            for target in (injector.killer, injector.pinger, injector.staller, injector.sampler)
        ]
        for thread in threads:
            thread.start()
        try:
            load = mixed_loop(port, small, big, args, expect)
        finally:
            injector.stop.set()
            for thread in threads:
                thread.join(args.body_timeout + 30)
        # Settle: every worker slot serving again before the end RSS is taken.
        settle = time.monotonic() + 60
        while time.monotonic() < settle and len(injector.workers()) < args.workers:
            time.sleep(0.05)
        after = [invoke_once(port, request) for _ in range(20)]
        rss_end = server.rss_bytes()
        log = server.log_path.read_text(errors="replace")
    statuses = load["status_counts"]
    undocumented = {k: v for k, v in statuses.items() if k not in DOCUMENTED and k != "504"}
    hung = statuses.get("hung", 0)
    ping_max = max(injector.pings) if injector.pings else 0.0
    growth = (rss_end - rss_start) / rss_start
    answered_after = sum(1 for code, body in after if code == 200 and body == expect)
    reload = injector.reload_kill or {}
    reload_logged = "after a failed load; retrying in" in log
    criteria = {
        "every_request_answered_documented": {
            "value": undocumented or "none undocumented",
            "met": not undocumented and load["wrong_body"] == 0,
        },
        "zero_hung_connections": {"value": hung, "met": hung == 0},
        "ping_max_under_1s": {"value": round(ping_max, 4), "met": ping_max < MAX_PING_S},
        "rss_growth_under_10pct": {"value": round(growth, 4), "met": growth < MAX_RSS_GROWTH},
        "stalled_uploads_408": {
            "value": injector.stalls,
            "met": bool(injector.stalls) and set(injector.stalls) == {"408"},
        },
        "worker_died_during_reload_retried": {
            "value": {**reload, "logged": reload_logged},
            "met": reload.get("pid") is not None and reload_logged,
        },
        "serving_after_the_run": {"value": f"{answered_after}/20 answered 200", "met": answered_after == 20},
    }
    return {
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {**args.machine, "loadavg_at_end": [round(x, 2) for x in os.getloadavg()]},
        "config": {
            "requests": args.requests,
            "concurrency": args.concurrency,
            "workers": args.workers,
            "rate_rps": args.rate,
            "kill_every_s": args.kill_every,
            "big_every": args.big_every,
            "big_body_bytes": len(big),
            "stall_every_s": args.stall_every,
            "body_timeout_s": args.body_timeout,
            "payload_bytes": len(small),
            "smkit_python": args.smkit_python,
        },
        **load,
        "workers_killed": len(injector.killed),
        "kills": injector.killed,
        "ping_probes": len(injector.pings),
        "ping_statuses": injector.ping_statuses,
        "ping_p99_ms": round(percentile(sorted(injector.pings), 99) * 1000, 2),
        "ping_max_ms": round(ping_max * 1000, 2),
        "rss_mb_start": round(rss_start / 2**20, 2),
        "rss_mb_end": round(rss_end / 2**20, 2),
        "rss_growth": round(growth, 4),
        "rss_mb_samples": [(t, round(b / 2**20, 1)) for t, b in injector.rss],
        "documented_statuses": {**DOCUMENTED, "504": DOCUMENTED_504},
        "criteria": criteria,
        "passed": all(c["met"] for c in criteria.values()),
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__.splitlines()[0])
    p.add_argument(
        "--model", type=Path, default=DEFAULT_MODEL, help="model.tar.gz (default build/model.tar.gz)"
    )
    p.add_argument("--payload", type=Path, default=DEFAULT_PAYLOAD, help="CSV body of 10 rows")
    p.add_argument("--rows", type=int, default=10, help="rows the payload must have (default 10)")
    p.add_argument("--requests", type=int, default=20_000, help="requests (default 20000)")
    p.add_argument("--concurrency", type=int, default=16, help="virtual users (default 16)")
    p.add_argument("--workers", type=int, default=2, help="server worker processes (default 2)")
    p.add_argument("--warmup", type=int, default=200, help="requests before the start RSS is taken")
    p.add_argument(
        "--rate",
        type=float,
        default=500.0,
        help="requests per second the users are paced to (default 500: 20,000 requests take 40 s, 20 kills)",
    )
    p.add_argument("--kill-every", type=float, default=2.0, help="seconds between worker kills (default 2)")
    p.add_argument("--big-every", type=int, default=2000, help="every Nth request has a 7 MiB body")
    p.add_argument("--stall-every", type=float, default=5.0, help="seconds between stalled uploads")
    p.add_argument("--body-timeout", type=float, default=2.0, help="SMKIT_BODY_TIMEOUT_SECONDS (default 2)")
    p.add_argument(
        "--hang-after",
        type=float,
        default=70.0,
        help="seconds without an answer that count as a hung connection",
    )
    add_output_options(p, out=RESULTS_DIR / "chaos.json")
    args = p.parse_args(argv)
    if args.requests < args.concurrency or args.concurrency < 1:
        p.error(f"--requests {args.requests} must be >= --concurrency {args.concurrency} >= 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return run_benchmark("chaos", parse_args(argv), chaos, markdown)


if __name__ == "__main__":
    sys.exit(main())
