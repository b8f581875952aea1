"""Set-up benchmark: `make setup` from uv.lock vs the old `pip install -e '.[dev]'`, on fresh clones.

    python -m bench.setup [--rounds 1] [--cold]

Each measurement starts from a fresh `git clone` of the checked-out commit (no .venv, no node_modules):

- ``make setup (lock, warm cache)``: what a developer or CI machine with a warm uv and npm cache runs: pip
  bootstraps uv, ``uv sync --frozen`` installs exactly the lock, ``npm ci`` the pinned CDK CLI.
- ``make setup (lock, cold uv cache)`` with ``--cold``: the same with an empty uv cache (every wheel
  downloaded from PyPI), the first run on a new machine.
- ``pip install -e '.[dev]' (old path)``: what `make setup` ran before the lock (a fresh venv, pip
  resolving the ranges of pyproject.toml afresh, with pip's own cache).

Wall time and the number of installed distributions are recorded. Results: ``bench/results/setup.json``
and the "setup" section of BENCHMARKS.md. Target: `make setup` under 60 s on 2 cores with a warm cache.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, RESULTS_DIR, machine_facts, replace_section, write_json

WORK = REPO_ROOT / "bench" / ".work" / "setup"


def _clone(name: str) -> Path:
    target = WORK / name
    shutil.rmtree(target, ignore_errors=True)
    subprocess.run(["git", "clone", "--quiet", str(REPO_ROOT), str(target)], check=True)
    return target


def _count(python: Path) -> int:
    code = "import importlib.metadata as m; print(len({d.metadata['Name'] for d in m.distributions()}))"
    return int(subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout)


def _timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(
            f"{' '.join(command)} failed in {cwd}:\n{result.stdout[-2000:]}{result.stderr[-2000:]}"
        )
    return elapsed


def _environ(**extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("VIRTUAL_ENV", "MAKEFLAGS", "MAKELEVEL")
    }
    return {**env, **extra}


def make_setup(label: str, **extra: str) -> dict[str, Any]:
    clone = _clone("lock")
    seconds = _timed(["make", "setup"], clone, _environ(**extra))
    row = {
        "path": label,
        "seconds": round(seconds, 1),
        "distributions": _count(clone / ".venv" / "bin" / "python"),
    }
    shutil.rmtree(clone, ignore_errors=True)
    return row


def pip_setup() -> dict[str, Any]:
    clone = _clone("pip")
    env = _environ()
    start = time.perf_counter()
    _timed([sys.executable, "-m", "venv", ".venv"], clone, env)
    pip = str(clone / ".venv" / "bin" / "pip")
    _timed([pip, "install", "--quiet", "--disable-pip-version-check", "-e", ".[dev]"], clone, env)
    _timed(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], clone, env)
    seconds = time.perf_counter() - start
    row = {
        "path": "pip install -e '.[dev]' + npm ci (old path, pip cache)",
        "seconds": round(seconds, 1),
        "distributions": _count(clone / ".venv" / "bin" / "python"),
    }
    shutil.rmtree(clone, ignore_errors=True)
    return row


def report(rows: list[dict[str, Any]], facts: dict[str, Any]) -> str:
    lines = [
        "## Set-up: `make setup` from the lock vs the old pip path",
        "",
        "`python -m bench.setup` (each row a fresh `git clone`, no .venv, no node_modules; "
        f"{facts['cpus']} CPUs, load average at start {facts['loadavg_at_start']}).",
        "",
        "| path | seconds | installed distributions |",
        "| --- | ---: | ---: |",
        *(f"| {row['path']} | {row['seconds']} | {row['distributions']} |" for row in rows),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--cold", action="store_true", help="also measure with an empty uv cache")
    parser.add_argument("--no-pip", action="store_true", help="skip the old pip path (minutes)")
    args = parser.parse_args(argv)
    facts = machine_facts()
    rows = []
    for _ in range(args.rounds):
        rows.append(make_setup("make setup (uv sync --frozen + npm ci, warm cache)"))
        if args.cold:
            with tempfile.TemporaryDirectory(prefix="uv-cache-") as cache:
                rows.append(
                    make_setup("make setup (uv sync --frozen + npm ci, empty uv cache)", UV_CACHE_DIR=cache)
                )
        if not args.no_pip:
            rows.append(pip_setup())
    for row in rows:
        print(json.dumps(row))
    write_json(RESULTS_DIR / "setup.json", {"machine": facts, "rows": rows})
    replace_section(REPO_ROOT / "BENCHMARKS.md", "setup", report(rows, facts))
    shutil.rmtree(WORK, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
