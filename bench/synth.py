"""Synth benchmark: every config in one CDK app (one process) vs a single config, in the same run.

    python -m bench.synth [--repeat 3] [--single config/realtime.yaml]

Each measurement is a fresh Python process that imports aws-cdk-lib, builds the app exactly as app.py
does (stacks + cdk-nag packs, cdk.json context) and synthesizes it into a temporary directory, so the
~3 s jsii start-up (docs/toolchain.md) is paid once per process, as it is by ``cdk synth`` and by the
test session. Reported: wall time of the whole process and the child's own split (import, build, synth);
medians (and best-of-N, steadier on a loaded machine) over ``--repeat`` runs. Results: ``bench/results/synth.json``. Target: all configs < 2x one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, RESULTS_DIR, machine_facts, write_json

CONFIG_DIR = REPO_ROOT / "config"
TARGET_RATIO = 2.0


def child(configs: list[str], outdir: str) -> dict[str, float]:
    """Run inside the measured process: import, build and synthesize; return the phase times."""
    t0 = time.perf_counter()
    import aws_cdk as cdk

    from smkit.cdk.compliance import add_compliance_checks
    from smkit.cdk.serving_stage import add_serving_stacks
    from smkit.config import load_deployment

    t1 = time.perf_counter()
    context = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
    app = cdk.App(context=context, outdir=outdir)
    for path in configs:
        add_serving_stacks(app, deployment=load_deployment(path))
    add_compliance_checks(app)
    t2 = time.perf_counter()
    assembly = app.synth()
    t3 = time.perf_counter()
    return {
        "import_s": t1 - t0,
        "build_s": t2 - t1,
        "synth_s": t3 - t2,
        "stacks": float(len(assembly.stacks)),
    }


def measure(configs: list[Path]) -> dict[str, Any]:
    """One fresh process synthesizing ``configs``; wall time plus the child's phase split."""
    with tempfile.TemporaryDirectory(prefix="smkit-synth-") as outdir:
        args = [sys.executable, "-m", "bench.synth", "--child", "--outdir", outdir, *map(str, configs)]
        start = time.perf_counter()
        result = subprocess.run(args, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"synth of {[c.name for c in configs]} failed:\n{result.stderr[-3000:]}")
    phases: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return {"wall_s": wall, **phases}


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ["wall_s", "import_s", "build_s", "synth_s"]
    return {
        **{f"median_{k}": round(statistics.median(r[k] for r in runs), 3) for k in keys},
        "min_wall_s": round(min(r["wall_s"] for r in runs), 3),
        "stacks": int(runs[0]["stacks"]),
        "runs": [{k: round(r[k], 3) for k in keys} for r in runs],
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--single", type=Path, default=CONFIG_DIR / "realtime.yaml")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--outdir", help=argparse.SUPPRESS)
    parser.add_argument("configs", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.configs, args.outdir)))
        return

    every = sorted(CONFIG_DIR.glob("*.yaml"))
    facts = machine_facts()
    single_runs, all_runs = [], []
    for _ in range(args.repeat):  # interleaved so both see the same machine load
        single_runs.append(measure([args.single]))
        all_runs.append(measure(every))
    single, together = summarize(single_runs), summarize(all_runs)
    ratio = together["median_wall_s"] / single["median_wall_s"]
    report = {
        "benchmark": "cdk synth: all configs in one process vs one config",
        "reference": f"one config ({args.single.relative_to(REPO_ROOT)}) in one process",
        "target": f"all / single < {TARGET_RATIO}",
        "machine": facts,
        "single": {"configs": [args.single.name], **single},
        "all": {"configs": [p.name for p in every], **together},
        "ratio_all_over_single": round(ratio, 3),
        # Best-of-N is the steadier estimate on a shared, loaded machine.
        "ratio_min_all_over_min_single": round(together["min_wall_s"] / single["min_wall_s"], 3),
        "per_extra_config_s": round(
            (together["median_wall_s"] - single["median_wall_s"]) / max(len(every) - 1, 1), 3
        ),
        "meets_target": ratio < TARGET_RATIO,
    }
    write_json(RESULTS_DIR / "synth.json", report)
    print(
        f"{'case':<8} {'configs':>7} {'stacks':>6} {'wall s':>8} {'import s':>9} {'build s':>8} {'synth s':>8}"
    )
    for name in ("single", "all"):
        data = report[name]
        print(
            f"{name:<8} {len(data['configs']):>7} {data['stacks']:>6} {data['median_wall_s']:>8.2f} "
            f"{data['median_import_s']:>9.2f} {data['median_build_s']:>8.2f} {data['median_synth_s']:>8.2f}"
        )
    verdict = "meets" if report["meets_target"] else "MISSES"
    print(f"all/single = {ratio:.2f} ({verdict} target < {TARGET_RATIO}); wrote bench/results/synth.json")


if __name__ == "__main__":
    main()
