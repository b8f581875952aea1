"""This tree's serving runtime against smkit at the baseline commit, in instructions per request (callgrind).

    python -m bench.serving_instructions   # writes bench/results/serving_instructions.json + BENCHMARKS.md

``make bench-serving`` compares the two servers by time, and on 2 shared cores a round of the example model
moves by 10 to 30 % from one run to the next: time cannot tell whether the tree is within 3 % of the
baseline. A count can. Both servers run on the same interpreter and venv under valgrind's callgrind, the
baseline from ``git archive`` of the commit's ``smkit/`` on PYTHONPATH (as ``bench.serving``'s
``smkit-baseline``); each serves the example model (``build/model.tar.gz``, 10 CSV rows a request) with the
workers ``make bench-serving`` gives it, to one caller and to several at once, and the front end and the
workers are counted as :func:`bench.metrics_instructions.count` does. Needs valgrind.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import (
    BENCHMARKS_MD,
    REPO_ROOT,
    RESULTS_DIR,
    export_tree,
    machine_facts,
    replace_section,
    write_json,
)
from bench.example_model import DEFAULT_MODEL, DEFAULT_PAYLOAD, extract_model, load_payload
from bench.metrics_instructions import Counted, count, valgrind_missing
from bench.serving import BASELINE_COMMIT

# "Within 3 %": the server as a whole (front end + workers, as make bench-serving's server CPU per request)
# executes at most 3 % more per request than at the baseline.
WITHIN = 1.03
ROLES = ("front", "worker", "total")


def _this_tree() -> str:
    """The commit this tree is at, marked when ``smkit/`` has changes not committed."""
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    changed = subprocess.run(
        ["git", "status", "--porcelain", "smkit"], cwd=REPO_ROOT, capture_output=True, text=True
    )
    return head + (" + changes" if changed.stdout.strip() else "")


def compare(tree: dict[str, float], baseline: dict[str, float]) -> dict[str, Any]:
    """Both counts with their totals, each ratio (this tree / baseline) and whether the total is within 3 %."""
    ours = {**tree, "total": tree["front"] + tree["worker"]}
    theirs = {**baseline, "total": baseline["front"] + baseline["worker"]}
    ratio = {role: ours[role] / theirs[role] for role in ROLES}
    return {
        "smkit": ours,
        "smkit-baseline": theirs,
        "ratio": ratio,
        "within_3pct": ratio["total"] <= WITHIN,
    }


def table(result: dict[str, Any]) -> str:
    """The BENCHMARKS.md section of a result."""
    lines = [
        f"Counted {result['generated_at']} with callgrind: this tree ({result['tree']}) against smkit at "
        f"{result['baseline']} (`git archive` of its `smkit/`), the example model (10 CSV rows a request), "
        f"{result['workers']} workers, access log off, {result['requests']} requests per row after a warm-up of "
        f"{result['warmup']} per caller. Within 3% means a total ratio (front end + workers) of at most {WITHIN}.",
        "",
        "| callers | front end instr/request (baseline) | ratio | workers instr/request (baseline) | ratio | "
        "total ratio | within 3% |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | :---: |",
    ]
    for callers, row in result["runs"].items():
        ours, theirs, ratio = row["smkit"], row["smkit-baseline"], row["ratio"]
        lines.append(
            f"| {callers} | {ours['front']:,.0f} ({theirs['front']:,.0f}) | {ratio['front']:.3f} | "
            f"{ours['worker']:,.0f} ({theirs['worker']:,.0f}) | {ratio['worker']:.3f} | {ratio['total']:.3f} | "
            f"{'yes' if row['within_3pct'] else 'no'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.serving_instructions", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--payload", type=Path, default=DEFAULT_PAYLOAD)
    parser.add_argument("--requests", type=int, default=400, help="counted requests per server and row")
    parser.add_argument("--warmup", type=int, default=100, help="requests per caller before the count")
    parser.add_argument(
        "--concurrency", default="1,8", help="comma-separated numbers of callers, one row each (default 1,8)"
    )
    parser.add_argument("--workers", type=int, default=2, help="model workers (make bench-serving's 2)")
    parser.add_argument(
        "--baseline", default=BASELINE_COMMIT, help=f"the commit to compare with ({BASELINE_COMMIT})"
    )
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "serving_instructions.json")
    parser.add_argument("--no-markdown", action="store_true")
    args = parser.parse_args(argv)
    try:
        levels = [int(level) for level in args.concurrency.split(",")]
    except ValueError:
        parser.error(f"--concurrency {args.concurrency!r}: not numbers; pass e.g. 1,8")
    if missing := valgrind_missing():
        print(f"bench.serving_instructions: {missing}", file=sys.stderr)
        return 1
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    runs: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-serving-callgrind-") as tmp:
        work = Path(tmp)
        model_dir = extract_model(args.model, work / "model")
        body = load_payload(args.payload, 10)
        baseline = export_tree(args.baseline, work / "baseline")
        for level in levels:
            counted = {}
            for name, tree in (("smkit", REPO_ROOT), ("smkit-baseline", baseline)):
                server = Counted(f"{name}-c{level}", tree=tree, workers=args.workers, concurrency=level)
                counted[name] = count(model_dir, body, args.requests, server, work, warmup=args.warmup)
                print(f"{name} at {level} caller(s): {counted[name]}", file=sys.stderr)
            runs[str(level)] = compare(counted["smkit"], counted["smkit-baseline"])
    result: dict[str, Any] = {
        "generated_at": started,
        "machine": machine_facts(),
        "tree": _this_tree(),
        "baseline": args.baseline,
        "requests": args.requests,
        "warmup": args.warmup,
        "workers": args.workers,
        "runs": runs,
    }
    write_json(args.out, result)
    text = table(result)
    print(text)
    if not args.no_markdown:
        replace_section(BENCHMARKS_MD, "serving-instructions", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
