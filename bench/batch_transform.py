"""Batch transform throughput on the JSON Lines batch example (model_code/batch_demo), against the reference in the same run.

    python -m bench.batch_transform                      # writes bench/results/batch_transform.json
    python -m bench.batch_transform --records 500 --out /tmp/batch.json      # smoke

Reference: SingleRecord with MaxConcurrentTransforms=1 (one request per record, one at a time). Compared:
SingleRecord with MaxConcurrentTransforms=2, and MultiRecord with MaxPayloadInMB=1 and the example's
line-splitting handler. Each job starts and stops its own serving runtime, as ``batch-transform --local``
does; wall time includes that start-up. Two JSON Lines input files of ``--records`` records each.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, RESULTS_DIR, machine_facts, write_json
from smkit import contract
from smkit.batch.local import LocalModel, run_local_job
from smkit.batch.options import AssembleWith, BatchStrategy, SplitType, TransformOptions
from smkit.packaging.build import build_archive

JSON = "application/json"
SCENARIOS: dict[str, tuple[TransformOptions, dict[str, str]]] = {
    "reference: SingleRecord x1": (
        TransformOptions(
            content_type=JSON,
            accept=JSON,
            split_type=SplitType.LINE,
            batch_strategy=BatchStrategy.SINGLE_RECORD,
            assemble_with=AssembleWith.LINE,
            max_concurrent_transforms=1,
        ),
        {},
    ),
    "SingleRecord x2": (
        TransformOptions(
            content_type=JSON,
            accept=JSON,
            split_type=SplitType.LINE,
            batch_strategy=BatchStrategy.SINGLE_RECORD,
            assemble_with=AssembleWith.LINE,
            max_concurrent_transforms=2,
        ),
        {},
    ),
    "MultiRecord 1 MB x2 (inference_lines.py)": (
        TransformOptions(
            content_type=JSON,
            accept=JSON,
            split_type=SplitType.LINE,
            batch_strategy=BatchStrategy.MULTI_RECORD,
            max_payload_mb=1,
            assemble_with=AssembleWith.LINE,
            max_concurrent_transforms=2,
        ),
        {contract.PROGRAM: "inference_lines.py"},
    ),
}


def write_inputs(folder: Path, records: int) -> None:
    """Two JSON Lines files: ``{"value": n}`` with n in 0..3000."""
    folder.mkdir(parents=True)
    rng = random.Random(3)
    for name in ("testdata1.jsonl", "testdata2.jsonl"):
        lines = [f'{{"value":{rng.randint(0, 3000)}}}\n' for _ in range(records)]
        (folder / name).write_text("".join(lines))


def run(records: int, work: Path) -> dict[str, Any]:
    """Run every scenario once; return the rows with records/s and the speed-up over the reference."""
    (work / "artifacts").mkdir()
    archive = work / "model.tar.gz"
    build_archive(REPO_ROOT / "model_code" / "batch_demo" / "code", work / "artifacts", archive)
    write_inputs(work / "in", records)
    rows = []
    for label, (options, environment) in SCENARIOS.items():
        started = time.perf_counter()
        result = run_local_job(
            options,
            LocalModel(archive, environment),
            input_location=str(work / "in"),
            output_location=str(work / f"out-{len(rows)}"),
            log=lambda _line: None,
        )
        seconds = time.perf_counter() - started
        if not result.ok:
            raise SystemExit(f"{label}: the job failed:\n{result.summary()}")
        total = sum(o.records for o in result.objects)
        rows.append(
            {
                "scenario": label,
                "records": total,
                "requests": sum(o.requests for o in result.objects),
                "wall_seconds": round(seconds, 3),
                "job_seconds": round(result.seconds, 3),
                "records_per_second": round(total / seconds, 1),
            }
        )
    reference = rows[0]["records_per_second"]
    for row in rows:
        row["speedup_vs_reference"] = round(row["records_per_second"] / reference, 2)
    return {"benchmark": "batch_transform", "machine": machine_facts(), "rows": rows}


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run, print a table and write the JSON."""
    parser = argparse.ArgumentParser(prog="python -m bench.batch_transform", description=__doc__)
    parser.add_argument("--records", type=int, default=5000, help="records per input file (two files)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "batch_transform.json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="smkit-bench-batch-") as tmp:
        report = run(args.records, Path(tmp))
    print(f"{'scenario':<42} {'records':>8} {'requests':>8} {'wall s':>8} {'rec/s':>9} {'x ref':>6}")
    for row in report["rows"]:
        print(
            f"{row['scenario']:<42} {row['records']:>8} {row['requests']:>8} {row['wall_seconds']:>8.2f} "
            f"{row['records_per_second']:>9.1f} {row['speedup_vs_reference']:>6.2f}"
        )
    write_json(args.out, report)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
