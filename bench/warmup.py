"""Warm-up curve: throughput per block of requests from a server's start, to choose ``bench.serving``'s warm-up.

    python -m bench.warmup                      # toolkit + MMS and smkit, 30 blocks of 1,000 at concurrency 8
    python -m bench.warmup --servers toolkit --blocks 10 --no-markdown   # a shorter look

A Java front end (Multi Model Server's) compiles its hot paths while it serves: its first thousands of
requests are slower than its steady state, and a benchmark that measures them compares smkit with a server
still warming up. Each server is started fresh and sent ``--blocks`` blocks of ``--block`` requests of the
example model back to back; the throughput of every block is kept. The warm-up ``bench.serving`` uses is
the first block count after which every server's rolling median of 3 blocks stays within 10% of its median
of the last third of the curve.
Writes ``bench/results/warmup.json`` and the ``warmup`` section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import (
    BENCHMARKS_MD,
    LOOPBACK,
    PORTS_BELOW,
    RESULTS_DIR,
    apply_niceness,
    machine_facts,
    replace_section,
    running,
    write_json,
)
from bench.envs import resolve_smkit_python
from bench.example_model import DEFAULT_MODEL, DEFAULT_PAYLOAD, extract_model, load_payload
from bench.load import Request, closed_loop
from bench.serving import SPEC_BUILDERS, Setup
from smkit.process import free_port

TOLERANCE = 0.10


def steady_after(curve: Sequence[float]) -> int:
    """Blocks after which the rolling median of 3 blocks stays within :data:`TOLERANCE` of the median of the
    curve's last third (a single noisy block on a shared machine does not move it)."""
    tail = curve[len(curve) - max(1, len(curve) // 3) :]
    steady = statistics.median(tail)
    rolling = [statistics.median(curve[i : i + 3]) for i in range(max(1, len(curve) - 2))]
    for start in range(len(rolling)):
        if all(abs(value - steady) <= TOLERANCE * steady for value in rolling[start:]):
            return start
    return len(curve)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.warmup", description=__doc__.splitlines()[0])
    p.add_argument("--servers", default="toolkit,smkit", help="comma list of bench.serving servers")
    p.add_argument("--blocks", type=int, default=30)
    p.add_argument("--block", type=int, default=1000, help="requests per block")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", type=Path, default=RESULTS_DIR / "warmup.json")
    p.add_argument("--nice", type=int, default=0, help="nice value for client and servers (e.g. -10 as root)")
    p.add_argument("--no-markdown", action="store_true")
    args = p.parse_args(argv)
    apply_niceness(args.nice)
    work = Path(tempfile.mkdtemp(prefix="smkit-bench-warmup-"))
    model_dir = extract_model(DEFAULT_MODEL, work / "model")
    names = [n for n in args.servers.split(",") if n]
    setup = Setup(
        model_dir=model_dir,
        work_dir=work,
        workers=args.workers,
        request=Request(
            "POST",
            "/invocations",
            load_payload(DEFAULT_PAYLOAD, 10),
            {"Content-Type": "text/csv", "Accept": "application/json"},
        ),
        expected=None,
        smkit_python=resolve_smkit_python("image", model_dir) if "smkit" in names else None,
    )
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    curves: dict[str, list[float]] = {}
    for name in names:
        spec = SPEC_BUILDERS[name](setup, model_dir, free_port(LOOPBACK, below=PORTS_BELOW))
        with running(spec, work / "logs") as server:
            curve = []
            for _ in range(args.blocks):
                done = closed_loop(server.port, setup.request, total=args.block, concurrency=args.concurrency)
                curve.append(round(done.throughput_rps, 1))
            curves[name] = curve
            print(f"{name:8s} " + " ".join(f"{v:.0f}" for v in curve), flush=True)
    steady = {name: steady_after(curve) for name, curve in curves.items()}
    result: dict[str, Any] = {
        "generated_at": started,
        "machine": machine_facts(),
        "config": {"block": args.block, "blocks": args.blocks, "concurrency": args.concurrency},
        "curves_rps": curves,
        "steady_after_blocks": steady,
        "warmup_requests": max(steady.values(), default=0) * args.block,
    }
    write_json(args.out, result)
    table = _markdown(result)
    print(table)
    if not args.no_markdown:
        replace_section(BENCHMARKS_MD, "warmup", table)
    return 0


def render(path: Path) -> str:
    """The Markdown of a saved run (its curves judged by :func:`steady_after` as it is now)."""
    result = json.loads(path.read_text())
    steady = {name: steady_after(curve) for name, curve in result["curves_rps"].items()}
    result["steady_after_blocks"] = steady
    result["warmup_requests"] = max(steady.values(), default=0) * result["config"]["block"]
    return _markdown(result)


def _markdown(result: dict[str, Any]) -> str:
    cfg = result["config"]
    lines = [
        f"Measured {result['generated_at']}, load average {result['machine']['loadavg_at_start']} at start: "
        f"throughput (req/s) of each block of {cfg['block']} example-model requests at concurrency "
        f"{cfg['concurrency']}, from a fresh start.",
        "",
        "| server | blocks until steady (rolling median of 3 within 10%) | curve (req/s per block) |",
        "| --- | ---: | --- |",
    ]
    for name, curve in result["curves_rps"].items():
        shown = ", ".join(f"{v:.0f}" for v in curve)
        lines.append(f"| {name} | {result['steady_after_blocks'][name]} | {shown} |")
    lines += ["", f"Steady by that rule after {result['warmup_requests']} requests (the slowest server).", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
