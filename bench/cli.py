"""CLI benchmark: ``smkit --help`` and ``smkit invoke`` of a running local endpoint, this tree vs a base
commit, in the same run.

    python -m bench.cli [--rounds 7] [--base 3f92a2f | --baseline PATH] [--no-markdown]

Every measurement is a fresh interpreter running what the ``smkit`` console script runs
(``from smkit.cli import main; main()``), from an empty folder, timed from spawn to exit (wall) with its
CPU time (``getrusage`` of the waited-for child). The base is a temporary ``git worktree`` of ``--base``
(removed afterwards), or ``--baseline PATH``, a checkout you made; it runs with this tree's interpreter and
``PYTHONPATH=<base>`` (the bench checks that ``smkit`` is imported from there), so both sides use the same
installed packages: compare commits whose ``uv.lock`` is the same, as it is for the default base. The two
sides alternate, first one then the other, in every round; medians and best-of-N are reported.

``invoke`` calls one local endpoint started here (``config/serverless.yaml``: one container, the
tabular example; needs ``make package-model``) with the JSON sample request and a JSON answer, end to end
through boto3 and the local gateway. Goals: ``--help`` <= 0.3 s, ``invoke`` <= 0.5 s (medians, this tree).
Results: ``bench/results/cli.json`` and the ``cli`` section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, RESULTS_DIR, BenchError, add_output_options, rotated, run_benchmark

BASE_COMMIT = "3f92a2f"
GOALS_S = {"help": 0.3, "invoke": 0.5}
CONFIG = REPO_ROOT / "config" / "serverless.yaml"
REQUEST = REPO_ROOT / "model_code" / "tabular" / "samples" / "request.json"
NO_BYTECODE = "this tree, venv without bytecode"
CONSOLE_SCRIPT = "import sys; from smkit.cli import main; sys.exit(main())"


def run_once(
    tree: Path, argv: list[str], cwd: Path, extra_env: dict[str, str] | None = None
) -> tuple[float, float]:
    """Wall and CPU seconds of one ``smkit ARGV`` from ``tree``; BenchError if it fails."""
    env = {**os.environ, "PYTHONPATH": str(tree), **(extra_env or {})}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CONSOLE_SCRIPT, *argv], cwd=cwd, env=env, capture_output=True, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise BenchError(f"smkit {' '.join(argv)} from {tree} failed: {done.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def check_imported_from(tree: Path, cwd: Path) -> None:
    """The interpreter with ``PYTHONPATH=tree`` imports smkit from ``tree`` (not the editable install)."""
    done = subprocess.run(
        [sys.executable, "-c", "import smkit; print(smkit.__file__)"],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        check=True,
    )
    if not Path(done.stdout.strip()).resolve().is_relative_to(tree.resolve()):
        raise BenchError(f"smkit is imported from {done.stdout.strip()}, not from {tree}")


@contextlib.contextmanager
def base_tree(args: argparse.Namespace, scratch: Path) -> Iterator[Path]:
    """``--baseline PATH`` as it is, or a temporary worktree of ``--base`` removed afterwards."""
    if args.baseline is not None:
        yield args.baseline.resolve()
        return
    path = scratch / "base"
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(path), args.base],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
    )
    try:
        yield path
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=REPO_ROOT, check=False)


def stdlib_only_bytecode(prefix: Path, argv: list[str], cwd: Path) -> dict[str, str]:
    """The environment of a run whose venv has no bytecode (synced without ``--compile-bytecode``) under
    ``PYTHONDONTWRITEBYTECODE``: a ``PYTHONPYCACHEPREFIX`` holding the standard library's .pyc only.

    One run writes the .pyc of everything ``argv`` imports into ``prefix``; all but the standard library's
    are deleted, so each measured run compiles the venv's and smkit's modules, as such a venv does.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(REPO_ROOT), PYTHONPYCACHEPREFIX=str(prefix))
    subprocess.run([sys.executable, "-c", CONSOLE_SCRIPT, *argv], cwd=cwd, env=env, capture_output=True)
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    for pyc in list(prefix.rglob("*.pyc")):
        if not (Path("/") / pyc.relative_to(prefix)).resolve().is_relative_to(stdlib):
            pyc.unlink()
    return {"PYTHONPYCACHEPREFIX": str(prefix), "PYTHONDONTWRITEBYTECODE": "1"}


def summarize(samples: list[tuple[float, float]]) -> dict[str, float]:
    walls = [w for w, _ in samples]
    cpus = [c for _, c in samples]
    return {
        "median_s": round(statistics.median(walls), 3),
        "best_s": round(min(walls), 3),
        "cpu_median_s": round(statistics.median(cpus), 3),
        "runs": len(samples),
    }


def measure(args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    from smkit.local import LocalEndpoint

    if not REQUEST.is_file() or not (REPO_ROOT / "build" / "model.tar.gz").is_file():
        raise BenchError("build/model.tar.gz is missing: run make package-model first")
    empty = scratch / "cwd"
    empty.mkdir()
    trees = {"this tree": REPO_ROOT}
    results: dict[str, Any] = {}
    with base_tree(args, scratch) as base:
        trees[f"base {args.base if args.baseline is None else args.baseline}"] = base
        for tree in trees.values():
            check_imported_from(tree, empty)
        with LocalEndpoint(CONFIG, root=REPO_ROOT, python=sys.executable) as endpoint:
            commands = {
                "help": ["--help"],
                "invoke": [
                    "invoke", "--endpoint", endpoint.name, "--endpoint-url", endpoint.url,
                    "--content-type", "application/json", "--data", f"@{REQUEST}",
                ],
            }  # fmt: skip
            for name, argv in commands.items():
                samples: dict[str, list[tuple[float, float]]] = {label: [] for label in trees}
                run_once(REPO_ROOT, argv, empty)  # warm the page cache and the endpoint
                # This tree again, as it runs from a venv without bytecode (make setup before
                # --compile-bytecode): the same run says what the bytecode is worth.
                unbuilt = stdlib_only_bytecode(scratch / f"pycache-{name}", argv, empty)
                samples[NO_BYTECODE] = []
                for round_ in range(args.rounds):
                    for label in rotated([*trees, NO_BYTECODE], round_):
                        if label == NO_BYTECODE:
                            samples[label].append(run_once(REPO_ROOT, argv, empty, unbuilt))
                        else:
                            samples[label].append(run_once(trees[label], argv, empty))
                results[name] = {label: summarize(s) for label, s in samples.items()}
    this, base_label = list(trees)
    for name, sides in results.items():
        sides["speedup"] = round(sides[base_label]["median_s"] / sides[this]["median_s"], 2)
        sides["goal_s"] = GOALS_S[name]
        sides["met"] = sides[this]["median_s"] <= GOALS_S[name]
    return {
        "benchmark": "cli",
        "machine": args.machine,
        "loadavg_at_end": [round(x, 2) for x in os.getloadavg()],
        "rounds": args.rounds,
        "this": this,
        "base": base_label,
        "results": results,
        "passed": all(sides["met"] for sides in results.values()),
    }


def markdown(result: dict[str, Any]) -> str:
    this, base = result["this"], result["base"]
    load = result["machine"]["loadavg_at_start"]
    lines = [
        "## CLI start and one invocation (`make bench-cli`)",
        "",
        f"Fresh interpreter per run, {result['rounds']} rounds alternating the two sides, "
        f"{result['machine']['cpus']} CPUs, load {load[0]:.1f} at start and "
        f"{result['loadavg_at_end'][0]:.1f} at the end. `invoke`: the JSON sample of the tabular example "
        "through boto3 and the local gateway (config/serverless.yaml). The base runs from a temporary "
        "`git worktree` with this tree's interpreter and `PYTHONPATH` (`BENCH_ARGS=--baseline PATH` for a "
        "checkout of your own); wall time on a loaded machine is mostly waiting for a core, the CPU column "
        "is what each command costs.",
        "",
        f"| command | goal | {this} median (best) | CPU | {base} median (best) | CPU | speed-up | met |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    labels = {"help": "`smkit --help`", "invoke": "`smkit invoke` (local endpoint)"}
    for name, sides in result["results"].items():
        a, b = sides[this], sides[base]
        lines.append(
            f"| {labels[name]} | <= {sides['goal_s']} s | {a['median_s']:.3f} s ({a['best_s']:.3f}) | "
            f"{a['cpu_median_s']:.2f} s | {b['median_s']:.3f} s ({b['best_s']:.3f}) | {b['cpu_median_s']:.2f} s | "
            f"{sides['speedup']:.1f}x | {'yes' if sides['met'] else 'no'} |"
        )
    lines += [
        "",
        "The venv holds its packages' bytecode (`make setup`: `uv sync --compile-bytecode`). Python writes "
        "none where `PYTHONDONTWRITEBYTECODE` is set (the image, this machine), so without it every command "
        "compiles the modules it imports; measured in the same run with only the standard library's .pyc "
        "(`PYTHONPYCACHEPREFIX`):",
        "",
    ]
    for name, sides in result["results"].items():
        if NO_BYTECODE in sides:
            a, c = sides[this], sides[NO_BYTECODE]
            lines.append(
                f"- {labels[name]}: {c['median_s']:.3f} s ({c['best_s']:.3f}), CPU {c['cpu_median_s']:.2f} s "
                f"without the venv's bytecode; {a['median_s']:.3f} s, CPU {a['cpu_median_s']:.2f} s with it."
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="runs of each command on each side")
    parser.add_argument("--base", default=BASE_COMMIT, help="commit to compare with (a temporary worktree)")
    parser.add_argument(
        "--baseline", type=Path, help="an existing checkout to compare with instead of --base"
    )
    add_output_options(parser, out=RESULTS_DIR / "cli.json")
    return run_benchmark("cli", parser.parse_args(argv), measure, markdown)


if __name__ == "__main__":
    sys.exit(main())
