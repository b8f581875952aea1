"""Packager benchmark: `smkit package` vs `tar -czf` on 1 GiB of model-like weights, in the same run.

    python -m bench.package [--size-mib 1024] [--threads N]

The weights are float32 matrices shaped like transformer layers: a low-rank component plus Gaussian
noise with a per-layer scale, every other layer rounded to bfloat16 precision (as checkpoints trained
in bf16 and saved in fp32 are), plus small norm/bias vectors and a config file. Like real weights
they are neither zeros nor incompressible. Both tools pack the same tree (weights at the root,
``code/``); `tar -czf` compresses with gzip's default level 6, so its size is the gzip -6 size.
Each tool runs as a separate process; wall time, process-tree CPU time and peak RSS are recorded.
Results: ``bench/results/package.json``. Target: >= 2x faster than `tar -czf` on 2 cores, size within
5% of gzip -6.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from bench.common import REPO_ROOT, RESULTS_DIR, machine_facts, write_json

WORK = REPO_ROOT / "bench" / ".work" / "package"
SMKIT = str(Path(sys.executable).with_name("smkit"))
LAYER_SHAPE = (4096, 4096)
RANK = 64
HANDLER = '''"""Benchmark handler: lists the weight files instead of loading 1 GiB."""
import os


def model_fn(model_dir):
    return sorted(os.listdir(model_dir))


def predict_fn(data, model):
    return data
'''


def _layer(rng: np.random.Generator, index: int) -> np.ndarray:
    rows, cols = LAYER_SHAPE
    scale = np.float32(0.02 * (1.0 + 0.1 * (index % 5)))
    low_rank = rng.standard_normal((rows, RANK), dtype=np.float32) @ rng.standard_normal(
        (RANK, cols), dtype=np.float32
    )
    weights = low_rank * (scale / np.float32(np.sqrt(RANK)) * np.float32(0.5))
    weights += rng.standard_normal(LAYER_SHAPE, dtype=np.float32) * scale
    if index % 2 == 0:  # bf16-trained checkpoint saved as fp32: low 16 mantissa bits are zero
        weights = (weights.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    return weights


def generate(size_mib: int) -> tuple[Path, Path]:
    """Write (or reuse) the weights folder and the handler folder; return both."""
    weights, code = WORK / f"weights-{size_mib}mib", WORK / "code"
    stamp = WORK / f"weights-{size_mib}mib.complete"
    if not stamp.exists():  # the stamp sits beside the folder so it is not part of the model
        shutil.rmtree(weights, ignore_errors=True)
        weights.mkdir(parents=True)
        rng = np.random.default_rng(2024)
        layer_bytes = LAYER_SHAPE[0] * LAYER_SHAPE[1] * 4
        n_layers = max(1, size_mib * (1 << 20) // layer_bytes)
        for i in range(n_layers):
            _layer(rng, i).tofile(weights / f"layer-{i:02d}.attn.weight.f32")
            (1.0 + 0.01 * rng.standard_normal(LAYER_SHAPE[1], dtype=np.float32)).tofile(
                weights / f"layer-{i:02d}.norm.f32"
            )
            (0.001 * rng.standard_normal(LAYER_SHAPE[1], dtype=np.float32)).tofile(
                weights / f"layer-{i:02d}.bias.f32"
            )
        config = {"layers": n_layers, "shape": LAYER_SHAPE, "dtype": "float32"}
        (weights / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        stamp.touch()
    code.mkdir(parents=True, exist_ok=True)
    (code / "inference.py").write_text(HANDLER)
    (code / "requirements.txt").write_text("")
    return weights, code


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for member in [proc, *proc.children(recursive=True)]:
        try:
            total += member.memory_info().rss
        except psutil.Error:
            continue
    return total


def _timed(argv: list[str], label: str) -> dict[str, float]:
    """Run one process to completion: wall time, CPU seconds and peak RSS (sampled every 20 ms) of its tree."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    watched = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        with contextlib.suppress(psutil.Error):
            peak = max(peak, _tree_rss(watched))
        time.sleep(0.02)
    wall = time.perf_counter() - began
    stderr = proc.stderr.read() if proc.stderr else b""
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{label} failed ({proc.returncode}): {stderr.decode(errors='replace')[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "peak_rss_mib": round(peak / 2**20, 1)}


def run(size_mib: int, threads: int) -> dict[str, Any]:
    """Build both archives and return the measurements."""
    weights, code = generate(size_mib)
    input_bytes = sum(p.stat().st_size for p in weights.iterdir())
    input_bytes += sum(p.stat().st_size for p in code.iterdir())
    ours, reference = WORK / "smkit.tar.gz", WORK / "tar-czf.tar.gz"
    for path in (ours, reference):
        path.unlink(missing_ok=True)
    subprocess.run(["sync"], check=False)
    smkit = _timed(
        [
            SMKIT,
            "package",
            "--code",
            str(code),
            "--artifacts",
            str(weights),
            "--output",
            str(ours),
            "--threads",
            str(threads),
            "--no-progress",
        ],
        "smkit package",
    )
    tar = _timed(
        ["tar", "-czf", str(reference), "-C", str(weights), ".", "-C", str(WORK), "code"],
        "tar -czf",
    )
    inspect = _timed([SMKIT, "inspect", "--no-handler-check", str(ours)], "smkit inspect")
    ours_size, ref_size = ours.stat().st_size, reference.stat().st_size
    return {
        "benchmark": "package",
        "input_bytes": input_bytes,
        "threads": threads,
        "smkit_package": {
            **smkit,
            "archive_bytes": ours_size,
            "throughput_mib_s": round(input_bytes / 2**20 / smkit["wall_s"], 1),
        },
        "tar_czf": {
            **tar,
            "archive_bytes": ref_size,
            "throughput_mib_s": round(input_bytes / 2**20 / tar["wall_s"], 1),
            "level": "gzip -6 (tar -czf default)",
        },
        "smkit_inspect_no_handler_check": {
            **inspect,
            "throughput_mib_s": round(input_bytes / 2**20 / inspect["wall_s"], 1),
        },
        "speedup_vs_tar_czf": round(tar["wall_s"] / smkit["wall_s"], 2),
        "cpu_ratio_vs_tar_czf": round(tar["cpu_s"] / smkit["cpu_s"], 2),
        "size_ratio_vs_gzip6": round(ours_size / ref_size, 4),
        "compression_ratio": {
            "smkit": round(ours_size / input_bytes, 4),
            "tar_czf": round(ref_size / input_bytes, 4),
        },
        "targets": {"speedup_min": 2.0, "size_ratio_max": 1.05},
        "targets_met": tar["wall_s"] / smkit["wall_s"] >= 2.0 and ours_size / ref_size <= 1.05,
        "note": "peak_rss_mib: largest resident set of the process tree, sampled every 20 ms.",
        "machine": machine_facts(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "package.json")
    args = parser.parse_args()
    result = run(args.size_mib, args.threads)
    s, t = result["smkit_package"], result["tar_czf"]
    print(f"input                {result['input_bytes']:>15,} bytes")
    print(
        f"smkit package        {s['wall_s']:>9.2f} s  {s['archive_bytes']:>15,} bytes  ({s['throughput_mib_s']} MiB/s, "
        f"{result['threads']} threads, peak RSS {s['peak_rss_mib']} MiB)"
    )
    print(
        f"tar -czf (gzip -6)   {t['wall_s']:>9.2f} s  {t['archive_bytes']:>15,} bytes  ({t['throughput_mib_s']} MiB/s)"
    )
    print(
        f"speedup {result['speedup_vs_tar_czf']}x wall, {result['cpu_ratio_vs_tar_czf']}x CPU, size {result['size_ratio_vs_gzip6']:.4f} of gzip -6, "
        f"targets met: {result['targets_met']}"
    )
    write_json(args.output, result)
    print(
        f"wrote {args.output.relative_to(REPO_ROOT) if args.output.is_relative_to(REPO_ROOT) else args.output}"
    )


if __name__ == "__main__":
    main()
