"""Engine settings that cannot work: how long ``smkit synth`` takes to refuse each, against the CLI's own start.

    python -m bench.refusals [--rounds 5] [--no-markdown]

Each misconfiguration of smkit/config/engine_checks.py, written as a user edits config/llm.yaml (LoRA off,
runtime LoRA updating off, an adapter folder whose rank exceeds ``SM_VLLM_MAX_LORA_RANK``, no config.json,
context longer than the model's, a model larger than the GPU, tensor parallelism over more GPUs than the
instance has), is given to ``smkit synth`` in a fresh interpreter (what the console script runs); a run counts
only if it exits 1 naming the setting and writes no cloud assembly; its wall time from spawn to exit and its
CPU time are recorded. The reference, in the same
rounds: ``smkit --help``, the interpreter and the CLI starting. The cases and the reference alternate in every
round; medians and best-of-N are reported. Goal: each refusal within 2 s (median wall). Model folders are
written as a Hugging Face save writes them (config.json, a safetensors header, tokenizer.json), by
smkit.llm.tiny as the tests write them; a large model's weights are a sparse file. Results:
``bench/results/refusals.json`` and the ``refusals`` section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from bench.common import REPO_ROOT, RESULTS_DIR, BenchError, rotated, run_benchmark
from smkit.llm.tiny import LLAMA_2_13B, write_adapter_shape, write_model_shape

GOAL_S = 2.0
LLM = REPO_ROOT / "config" / "llm.yaml"
CONSOLE_SCRIPT = "import sys; from smkit.cli import main; sys.exit(main())"
REFERENCE = "smkit --help"


def _config(
    folder: Path, env: dict[str, str | None], model: Path | None = None, adapter: Path | None = None
) -> Path:
    data = yaml.safe_load(LLM.read_text(encoding="utf-8"))
    container = data["model"]["containers"][0]
    if model is not None:
        container["model_data"] = {"source": "prefix", "path": str(model)}
    if adapter is not None:
        component = data["endpoint"]["inference_components"]["components"][1]
        del component["artifact_url"]
        component["artifact_path"] = str(adapter)
    for name, value in env.items():
        if value is None:
            container["environment"].pop(name, None)
        else:
            container["environment"][name] = value
    path = folder / "my-llm.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


# case -> (the config, written into an empty folder; the setting the refusal must name)
CASES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "LoRA off": (lambda d: _config(d, {"SM_VLLM_ENABLE_LORA": None}), "SM_VLLM_ENABLE_LORA"),
    "runtime LoRA updating off": (
        lambda d: _config(d, {"VLLM_ALLOW_RUNTIME_LORA_UPDATING": None}),
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING",
    ),
    "LoRA rank above the maximum": (
        lambda d: _config(d, {"SM_VLLM_MAX_LORA_RANK": "4"}, adapter=write_adapter_shape(d / "adapter", 8)),
        "SM_VLLM_MAX_LORA_RANK",
    ),
    "no config.json": (
        lambda d: _config(d, {}, write_model_shape(d / "m", None, 1000)),
        "has no config.json",
    ),
    "context too long": (
        lambda d: _config(
            d, {"SM_VLLM_MAX_MODEL_LEN": "8192"}, write_model_shape(d / "m", LLAMA_2_13B, 1000)
        ),
        "SM_VLLM_MAX_MODEL_LEN",
    ),
    "model larger than the GPU": (
        lambda d: _config(
            d, {"SM_VLLM_MAX_MODEL_LEN": "4096"}, write_model_shape(d / "m", LLAMA_2_13B, 13_000_000_000)
        ),
        "the model does not fit",
    ),
    "tensor parallelism over the GPUs": (
        lambda d: _config(d, {"SM_VLLM_TENSOR_PARALLEL_SIZE": "4"}),
        "SM_VLLM_TENSOR_PARALLEL_SIZE",
    ),
}


def run_once(argv: list[str], cwd: Path, refused: str | None) -> tuple[float, float]:
    """Wall and CPU seconds of one ``smkit ARGV``; BenchError unless it refused naming ``refused`` (or, for
    the reference, succeeded)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CONSOLE_SCRIPT, *argv], cwd=cwd, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    expected = 0 if refused is None else 1
    if done.returncode != expected or (refused is not None and refused not in done.stderr):
        raise BenchError(
            f"smkit {' '.join(argv)}: exit {done.returncode}, expected {expected}: {done.stderr[-2000:]}"
        )
    if (cwd / "cdk.out").exists():
        raise BenchError(f"smkit {' '.join(argv)} wrote {cwd / 'cdk.out'} before refusing")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    runs: dict[str, tuple[list[str], Path, str | None]] = {}
    for i, (case, (write, refused)) in enumerate(CASES.items()):
        folder = scratch / f"case-{i}"
        folder.mkdir()
        config = write(folder)
        runs[case] = (["synth", "--config", str(config), "-o", "cdk.out"], folder, refused)
    empty = scratch / "empty"
    empty.mkdir()
    runs[REFERENCE] = (["--help"], empty, None)
    for argv, cwd, refused in runs.values():
        run_once(argv, cwd, refused)  # warm the page cache
    samples: dict[str, list[tuple[float, float]]] = {label: [] for label in runs}
    for round_ in range(args.rounds):
        for label in rotated(list(runs), round_):
            samples[label].append(run_once(*runs[label]))
    results = {}
    for label, values in samples.items():
        walls, cpus = [w for w, _ in values], [c for _, c in values]
        results[label] = {
            "median_s": round(statistics.median(walls), 3),
            "best_s": round(min(walls), 3),
            "cpu_median_s": round(statistics.median(cpus), 3),
            "met": label == REFERENCE or statistics.median(walls) <= GOAL_S,
        }
    return {
        "benchmark": "refusals",
        "machine": args.machine,
        "loadavg_at_end": [round(x, 2) for x in os.getloadavg()],
        "rounds": args.rounds,
        "goal_s": GOAL_S,
        "results": results,
        "passed": all(r["met"] for r in results.values()),
    }


def markdown(result: dict[str, Any]) -> str:
    load = result["machine"]["loadavg_at_start"]
    reference = result["results"][REFERENCE]
    lines = [
        "## Engine settings refused before synth (`make bench-refusals`)",
        "",
        f"`smkit synth` of config/llm.yaml edited into each misconfiguration, a fresh interpreter per run, "
        f"{result['rounds']} rounds alternating the cases and the reference (`{REFERENCE}`), "
        f"{result['machine']['cpus']} CPUs, nice {result['machine']['nice']}, load {load[0]:.1f} at start and "
        f"{result['loadavg_at_end'][0]:.1f} "
        "at the end. Each run exits 1 naming the setting and writes no cloud assembly. Wall time on a loaded "
        "machine is mostly waiting for a core; the CPU column is what each command costs.",
        "",
        "| case | goal | median (best) | CPU | over the reference (median) | met |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for label, r in result["results"].items():
        goal = "-" if label == REFERENCE else f"<= {result['goal_s']} s"
        over = "-" if label == REFERENCE else f"+{r['median_s'] - reference['median_s']:.2f} s"
        lines.append(
            f"| {label} | {goal} | {r['median_s']:.2f} s ({r['best_s']:.2f}) | {r['cpu_median_s']:.2f} s | "
            f"{over} | {'yes' if r['met'] else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / "refusals.json", help="JSON result path")
    parser.add_argument("--nice", type=int, default=0, help="nice value (e.g. -10 as root)")
    parser.add_argument("--no-markdown", action="store_true", help="do not update BENCHMARKS.md")
    return run_benchmark("refusals", parser.parse_args(argv), measure, markdown)


if __name__ == "__main__":
    raise SystemExit(main())
