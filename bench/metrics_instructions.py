"""Instructions per request of the serving runtime with ``/metrics`` on and off, counted by callgrind.

    python -m bench.metrics_instructions      # writes bench/results/metrics_instructions.json + BENCHMARKS.md

A count, not a time: the same code gives the same figure on a busy or a quiet machine, where CPU time per
request moves by a third between rounds (``BENCHMARKS.md``, "Metrics on vs off"). The front end and its one
model worker (the example model, ``build/model.tar.gz``) both run under valgrind's callgrind, and only the
measured requests after a warm-up are counted (:func:`count` says how). :func:`count` is also what
``bench.serving_instructions`` counts this tree and the baseline commit with. Needs valgrind
(``callgrind_control``).
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from bench.common import BENCHMARKS_MD, REPO_ROOT, RESULTS_DIR, machine_facts, replace_section, write_json
from bench.example_model import DEFAULT_MODEL, DEFAULT_PAYLOAD, extract_model, load_payload
from smkit.process import free_port


def _request(conn: http.client.HTTPConnection, body: bytes) -> None:
    conn.request("POST", "/invocations", body, {"Content-Type": "text/csv", "Accept": "application/json"})
    response = conn.getresponse()
    response.read()
    if response.status != 200:
        raise SystemExit(f"invocation answered {response.status}")


def _connect(port: int, body: bytes, proc: subprocess.Popen[bytes]) -> http.client.HTTPConnection:
    """A connection whose first request was answered (the server under valgrind starts in minutes)."""
    deadline = time.monotonic() + 600
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
            _request(conn, body)
            return conn
        except (OSError, SystemExit):
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit("the server under valgrind did not start") from None
            time.sleep(0.5)


def _send(conns: list[http.client.HTTPConnection], body: bytes, each: int) -> None:
    """``each`` requests on every connection, the connections concurrently (one client thread each)."""

    def caller(conn: http.client.HTTPConnection) -> None:
        for _ in range(each):
            _request(conn, body)

    with ThreadPoolExecutor(len(conns)) as pool:
        for done in [pool.submit(caller, conn) for conn in conns]:
            done.result()


def _callgrind_runs(control: str, tree: list[int]) -> list[str]:
    """The processes of ``tree`` that run under callgrind (a worker's own subprocesses may not)."""
    listed = subprocess.run([control], check=True, capture_output=True, text=True).stdout
    running = {line.split()[1].rstrip(":") for line in listed.splitlines() if line.startswith("PID ")}
    return [str(pid) for pid in tree if str(pid) in running]


def _control(control: str, action: str, pids: list[str]) -> None:
    """``callgrind_control ACTION PID...``; it exits 0 even when it fails, so its output is checked."""
    done = subprocess.run([control, action, *pids], check=True, capture_output=True, text=True)
    if "Error" in done.stdout or "Error" in done.stderr:
        raise SystemExit(f"callgrind_control {action}: {done.stdout.strip()} {done.stderr.strip()}")


@dataclass(frozen=True)
class Counted:
    """What runs under callgrind: smkit imported from ``tree`` (its ``smkit/``), with ``env`` added."""

    label: str
    tree: Path = REPO_ROOT
    env: Mapping[str, str] = field(default_factory=dict)
    workers: int = 1
    concurrency: int = 1


def valgrind_missing() -> str | None:
    """Why the count cannot run here (valgrind or ``callgrind_control`` not found), or None."""
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        return "valgrind is not installed (its callgrind tool and callgrind_control are needed)"
    return None


def count(
    model_dir: Path, body: bytes, requests: int, server: Counted, work: Path, *, warmup: int = 100
) -> dict[str, float]:
    """Instructions per request of the front end and of its workers (summed over the worker processes).

    ``requests`` are sent ``server.concurrency`` at a time, each caller on its own keep-alive connection,
    after ``warmup`` requests per caller. The front end is counted over those requests alone
    (``callgrind_control`` switches its instrumentation on and off). The workers are forked from the worker
    template, and a forked process under valgrind has no ``vgdb`` channel to be switched through; so they
    are counted over their whole lives, in this run and in a run of the same server that gets the warm-up
    alone, and the difference is what the requests cost them (an idle worker blocks waiting for a job:
    it executes nothing)."""
    each = max(1, requests // server.concurrency)
    front, worker = _run(model_dir, body, warmup, each, server, work / server.label)
    _, idle = _run(model_dir, body, warmup, 0, server, work / f"{server.label}-idle")
    if len(worker) != len(idle):
        raise SystemExit(f"{server.label}: {len(worker)} worker processes wrote counts, {len(idle)} idle")
    sent = each * server.concurrency
    return {"front": front / sent, "worker": (sum(worker) - sum(idle)) / sent}


def _run(
    model_dir: Path, body: bytes, warmup: int, each: int, server: Counted, out: Path
) -> tuple[int, list[int]]:
    """One server under callgrind, ``each`` requests per caller after the warm-up: the front end's count
    over those requests, and each worker process's count over its life (one per dump, in name order)."""
    valgrind, control = shutil.which("valgrind"), shutil.which("callgrind_control")
    assert valgrind is not None and control is not None
    out.mkdir()
    wrapper = out / "worker-python"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'exec {valgrind} --tool=callgrind --callgrind-out-file={out}/worker.%p "{sys.executable}" "$@"\n'
    )
    wrapper.chmod(0o755)
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(server.tree),
        "PYTHONHASHSEED": "0",  # the same dict and set layouts in every run
        "SMKIT_WORKER_PYTHON": str(wrapper),
        "SMKIT_ACCESS_LOG": "false",
        **server.env,
    }
    argv = [valgrind, "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}/front.%p"]
    argv += [sys.executable, "-m", "smkit.serving", "--model", str(model_dir), "--port", str(port)]
    argv += ["--host", "127.0.0.1", "--workers", str(server.workers)]
    # The tree is the working directory too: ``python -m`` puts it first on sys.path.
    proc = subprocess.Popen(
        argv, env=env, cwd=server.tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        conns = [_connect(port, body, proc) for _ in range(server.concurrency)]
        _send(conns, body, warmup)
        pids = _callgrind_runs(control, [proc.pid])
        _control(control, "--instr=on", pids)
        _send(conns, body, each)
        _control(control, "--instr=off", pids)
        _control(control, "--dump", pids)
        for conn in conns:
            conn.close()
    finally:
        family = psutil.Process(proc.pid).children(recursive=True) if proc.poll() is None else []
        proc.terminate()
        proc.wait(timeout=300)
        # Workers are reaped by the front end or, once it is gone, by init: each writes its dump as it exits.
        psutil.wait_procs(family, timeout=300)
    # A dump holds what was counted since the one before (callgrind zeroes its counters): the front end's
    # dump asked for above, then nothing at its exit, as its instrumentation was off by then.
    front, workers = 0, []
    for dump in sorted(out.glob("*.*")):
        if dump.name.startswith(("front.", "worker.")):
            total = _total(dump)
            if dump.name.startswith("front."):
                front += total
            else:
                workers.append(total)
    return front, workers


def _total(dump: Path) -> int:
    for line in dump.read_text(errors="replace").splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    raise SystemExit(f"{dump}: no totals line")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.metrics_instructions", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--payload", type=Path, default=DEFAULT_PAYLOAD)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "metrics_instructions.json")
    parser.add_argument("--no-markdown", action="store_true")
    args = parser.parse_args(argv)
    if missing := valgrind_missing():
        print(f"bench.metrics_instructions: {missing}", file=sys.stderr)
        return 1
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="bench-metrics-callgrind-") as tmp:
        work = Path(tmp)
        model_dir = extract_model(args.model, work / "model")
        body = load_payload(args.payload, 10)
        off = count(model_dir, body, args.requests, Counted("off", env={"SMKIT_METRICS": "false"}), work)
        on = count(model_dir, body, args.requests, Counted("on", env={"SMKIT_METRICS": "true"}), work)
    result: dict[str, Any] = {
        "generated_at": started,
        "machine": machine_facts(),
        "requests": args.requests,
        "off": off,
        "on": on,
        "front_ratio": on["front"] / off["front"],
        "total_ratio": (on["front"] + on["worker"]) / (off["front"] + off["worker"]),
    }
    write_json(args.out, result)
    table = "\n".join(
        [
            f"Counted {started} with callgrind, {args.requests} requests of the example model (10 CSV rows), one "
            "worker, access log off.",
            "",
            "| /metrics | front end instructions/request | worker instructions/request | total |",
            "| --- | ---: | ---: | ---: |",
            f"| off | {off['front']:,.0f} | {off['worker']:,.0f} | {off['front'] + off['worker']:,.0f} |",
            f"| on | {on['front']:,.0f} | {on['worker']:,.0f} | {on['front'] + on['worker']:,.0f} |",
            f"| on / off | {result['front_ratio']:.3f} | {on['worker'] / off['worker']:.3f} | "
            f"{result['total_ratio']:.3f} |",
        ]
    )
    print(table)
    if not args.no_markdown:
        replace_section(BENCHMARKS_MD, "metrics-instructions", table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
