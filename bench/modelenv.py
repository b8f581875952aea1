"""Model environments and a multi-model first load: this checkout vs a baseline commit, in the same run.

    python -m bench.modelenv [--rounds 1] [--base-commit 3f92a2f | --baseline PATH]

For each smkit source tree (this checkout, and the baseline: a temporary ``git worktree`` of
``--base-commit`` under bench/.work with its own venv made by ``uv sync --frozen`` from its own lock,
removed at the end unless ``--keep-baseline``; or ``--baseline PATH``, a checkout whose ``.venv`` is
already set up), each in a fresh process:

- ``environment, empty smkit cache``: :func:`smkit.modelenv.model_environment` of a model folder whose
  ``code/requirements.txt`` is the scikit-learn scaffold's (scikit-learn + pandas), with an empty
  ``$SMKIT_CACHE_DIR`` and a warm package cache (a discarded build of the same environment runs first:
  uv's cache for this checkout, pip's for a baseline that builds with pip).
- ``environment, cached``: the same call again in a new process, the smkit cache now holding it.
- ``multi-model first load``: ``python -m smkit.serving --multi-model`` started with the tree's own image
  layer (the image's packages, no scikit-learn), then ``POST /models`` of an archive that this checkout's
  ``smkit package --vendor-wheels`` built: ``code/wheels`` vendors scikit-learn + pandas + scipy and their
  dependencies (not numpy: the image has it) and the bytecode of the modules the handler imports (a
  baseline without that feature installs the wheels alone), timed to its 200. SageMaker answers
  ``ModelNotReadyException`` to a load that takes over 60 s. The kit's image has uv (this checkout's
  runtime installs with it); the row ``(no uv ...)`` is an image without uv (``SMKIT_UV=none``: the wheels
  unpacked by pypa's installer). Rounds alternate between the trees.

Times are wall seconds of the call (the environment rows: inside the process, imports excluded and given
separately; a first load includes extracting the archive, installing the wheels and importing the
handler, whose imports alone are timed too, in a fresh process). Results: ``bench/results/modelenv.json`` and the "modelenv" section of BENCHMARKS.md.
Goals: empty cache <= 15 s, cached <= 1 s, first load <= 5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import (
    LOOPBACK,
    REPO_ROOT,
    RESULTS_DIR,
    ServerSpec,
    machine_facts,
    replace_section,
    running,
    write_json,
)
from smkit.process import free_port

WORK = REPO_ROOT / "bench" / ".work" / "modelenv"
BASE_COMMIT = "3f92a2f"
ENV_REQUIREMENTS = "scikit-learn==1.9.1\npandas==3.1.1\n"  # the sklearn scaffold's (smkit.scaffold)
LOAD_REQUIREMENTS = "scikit-learn==1.9.1\npandas==3.1.1\nscipy==1.17.1\n"
IMPORTS = "import pandas, scipy.sparse, sklearn.linear_model"
HANDLER = f"""
{IMPORTS}

def model_fn(model_dir):
    return sklearn.linear_model.LinearRegression()

def predict_fn(data, model):
    return {{"ok": True}}
"""
# Run by the tree's interpreter: one model environment, timed inside the process.
BUILD = """
import json, sys, time
start = time.perf_counter()
from smkit.modelenv import model_environment
imported = time.perf_counter()
env = model_environment(sys.argv[1], progress=False)
done = time.perf_counter()
print(json.dumps({"import_s": imported - start, "seconds": done - imported, "python": env.python}))
"""
IMAGE_LAYER = """
import json
from smkit.modelenv import ImageRuntime, image_environment
print(json.dumps(image_environment(ImageRuntime(), progress=False)))
"""


def _environ(cache: Path, *, path_without_uv: bool = False) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "SMKIT_UV")}
    env["SMKIT_CACHE_DIR"] = str(cache)
    if path_without_uv:
        env["PATH"] = os.pathsep.join(
            p for p in env.get("PATH", "").split(os.pathsep) if p and not (Path(p) / "uv").exists()
        )
    return env


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(command[:4])} failed in {cwd}:\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
        )
    return done.stdout


def baseline_tree(commit: str) -> Path:
    """A worktree of ``commit`` with a venv from its own lock (kept in bench/.work between runs)."""
    tree = WORK / f"base-{commit}"
    if not (tree / ".venv" / "bin" / "python").exists():
        if tree.exists():
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO_ROOT, check=False)
            shutil.rmtree(tree, ignore_errors=True)
        WORK.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), commit], cwd=REPO_ROOT, check=True)
        uv = REPO_ROOT / ".venv" / "bin" / "uv"
        env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
        _run([str(uv), "sync", "--frozen", "--extra", "serve", "--quiet"], tree, env)
    return tree


def _model(folder: Path, requirements: str) -> Path:
    (folder / "code").mkdir(parents=True, exist_ok=True)
    (folder / "code" / "requirements.txt").write_text(requirements)
    return folder


def environment_rows(tree: Path, label: str, scratch: Path) -> list[dict[str, Any]]:
    python = str(tree / ".venv" / "bin" / "python")
    model = _model(scratch / f"{label}-model", ENV_REQUIREMENTS)
    warm = scratch / f"{label}-warmup-cache"
    _run([python, "-c", BUILD, str(model)], tree, _environ(warm))  # warms uv's / pip's package cache
    shutil.rmtree(warm, ignore_errors=True)
    cache = scratch / f"{label}-cache"
    rows = []
    for case in ("environment, empty smkit cache", "environment, cached"):
        result = json.loads(_run([python, "-c", BUILD, str(model)], tree, _environ(cache)).splitlines()[-1])
        rows.append(
            {
                "tree": label,
                "case": case,
                "seconds": round(result["seconds"], 3),
                "import_s": round(result["import_s"], 3),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    shutil.rmtree(cache, ignore_errors=True)
    return rows


def load_archive(path: Path, scratch: Path) -> Path:
    """The model as a user packages it: ``smkit package --vendor-wheels`` for the kit's image, by this checkout.

    The wheels of LOAD_REQUIREMENTS for the image's platform, except what the image installs at the same
    version (numpy), and the bytecode of the vendored modules the handler check imported
    (smkit/packaging/bytecode.py). Both trees load this same archive."""
    model = _model(scratch / "load-model", LOAD_REQUIREMENTS)
    (model / "code" / "inference.py").write_text(HANDLER)
    (model / "artifacts").mkdir(exist_ok=True)
    (model / "artifacts" / "weights.txt").write_text("1\n")
    smkit = str(REPO_ROOT / ".venv" / "bin" / "smkit")
    command = [smkit, "package", "--code", str(model / "code"), "--artifacts", str(model / "artifacts")]
    _run([*command, "--output", str(path), "--vendor-wheels"], REPO_ROOT, _environ(WORK / "package-cache"))
    return path


def first_load(tree: Path, label: str, archive: Path, scratch: Path, *, unpack: bool) -> dict[str, Any]:
    cache = scratch / f"{label}-image-cache"  # the image layer is built once per tree and kept
    python = str(tree / ".venv" / "bin" / "python")
    image = json.loads(_run([python, "-c", IMAGE_LAYER], tree, _environ(cache)).splitlines()[-1])
    prefix = scratch / f"{label}-prefix"
    prefix.mkdir(exist_ok=True)
    requirements = Path(tempfile.mkdtemp(prefix="requirements-", dir=scratch))
    port = free_port(LOOPBACK)
    env = _environ(cache, path_without_uv=True)
    env["SMKIT_REQUIREMENTS_DIR"] = str(requirements)
    if unpack:
        env["SMKIT_UV"] = "none"
    argv = [
        image,
        "-m",
        "smkit.serving",
        "--multi-model",
        str(prefix),
        "--host",
        LOOPBACK,
        "--port",
        str(port),
    ]
    spec = ServerSpec(name=f"{label}-mme", argv=[*argv, "--workers", "1"], port=port, env=env, cwd=tree)
    with running(spec, scratch / "logs") as server:
        start = time.perf_counter()
        answer = httpx.post(
            f"http://{LOOPBACK}:{port}/models",
            json={"model_name": "m", "url": str(archive)},
            timeout=600,
        )
        seconds = time.perf_counter() - start
        if answer.status_code != 200:
            raise SystemExit(f"{label}: POST /models answered {answer.status_code}: {answer.text[:2000]}\n"
                             f"{server.log_tail()}")  # fmt: skip
    # The floor: the handler's own imports, in a fresh process with the installed packages.
    installed = [str(p) for p in requirements.iterdir() if p.is_dir()]
    start = time.perf_counter()
    _run([image, "-c", "import sys; sys.path[:0] = sys.argv[1:]; " + IMPORTS, *installed], tree, env)
    floor = time.perf_counter() - start
    shutil.rmtree(requirements, ignore_errors=True)
    case = "multi-model first load" + (" (no uv: wheels unpacked by installer)" if unpack else "")
    row = {"tree": label, "case": case, "seconds": round(seconds, 3), "imports_alone_s": round(floor, 3)}
    print(json.dumps(row), flush=True)
    return row


GOALS = {"environment, empty smkit cache": 15.0, "environment, cached": 1.0, "multi-model first load": 5.0}


def report(rows: list[dict[str, Any]], facts: dict[str, Any], base: str) -> str:
    cases = list(dict.fromkeys(r["case"] for r in rows))
    lines = [
        "## Model environments and a multi-model first load",
        "",
        f"`make bench-modelenv` (`python -m bench.modelenv`; this checkout vs {base}, same run; {facts['cpus']} "
        f"CPUs, load average at start {facts['loadavg_at_start']}). Seconds, median of the rounds.",
        "",
        "| case | goal | this checkout | baseline | speed-up | handler's imports alone (this checkout) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for case in cases:
        ours = sorted(r["seconds"] for r in rows if r["case"] == case and r["tree"] == "checkout")
        theirs = sorted(r["seconds"] for r in rows if r["case"] == case and r["tree"] == "baseline")
        a = ours[len(ours) // 2] if ours else None
        b = theirs[len(theirs) // 2] if theirs else None
        goal = GOALS.get(case)
        ratio = f"{b / a:.1f}x" if a and b else "-"
        floors = sorted(
            r["imports_alone_s"]
            for r in rows
            if r["case"] == case and r["tree"] == "checkout" and "imports_alone_s" in r
        )
        floor = f"{floors[len(floors) // 2]}" if floors else "-"
        lines.append(
            f"| {case} | {f'<= {goal:g}' if goal else '-'} | {a if a is not None else '-'} | "
            f"{b if b is not None else '-'} | {ratio} | {floor} |"
        )
    lines += [
        "",
        "The environment rows time `model_environment` itself; importing smkit before it is given in the JSON "
        "(`import_s`). This checkout resolves with `uv pip compile` and links the files from uv's cache; the "
        "baseline installs with pip (`pip install --target`, bytecode compiled). A first load is the "
        "container's `POST /models`: extracting the archive, installing its vendored wheels (this checkout: "
        "uv, which the image now has, or, without uv, pypa's installer; the baseline: `pip install --no-deps`), "
        "importing the handler and `model_fn`. Both trees load the same archive, built by this checkout's "
        "`smkit package --vendor-wheels`: it carries the bytecode of the vendored modules the handler check "
        "imported (`code/wheels/bytecode.cpython-311.zip`, smkit/packaging/bytecode.py), which this "
        "checkout's install puts beside the installed sources and the baseline does not know. The last "
        "column is the handler's imports alone in a fresh process with the packages installed: the floor no "
        "installer removes (the image layer standing for the image holds its packages' bytecode, as the "
        "image's pip install writes it; the image and this machine set PYTHONDONTWRITEBYTECODE). pip "
        "compiles every module at install time, inside the baseline's load. On a loaded machine every "
        "number grows with the load; the "
        "ratios between the two trees of one run are the comparison.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1, help="rounds of the environment rows")
    parser.add_argument("--load-rounds", type=int, default=3, help="rounds of the first-load rows")
    parser.add_argument("--base-commit", default=BASE_COMMIT, help="baseline commit (a temporary worktree)")
    parser.add_argument("--baseline", type=Path, help="a baseline checkout with its .venv set up instead")
    parser.add_argument("--no-baseline", action="store_true", help="measure this checkout only")
    parser.add_argument("--keep-baseline", action="store_true", help="keep the worktree for the next run")
    parser.add_argument("--report-only", action="store_true", help="rewrite BENCHMARKS.md from the JSON")
    args = parser.parse_args(argv)
    if args.report_only:
        data = json.loads((RESULTS_DIR / "modelenv.json").read_text())
        replace_section(
            REPO_ROOT / "BENCHMARKS.md", "modelenv", report(data["rows"], data["machine"], data["baseline"])
        )
        return 0
    facts = machine_facts()
    trees = {"checkout": REPO_ROOT}
    base = "no baseline"
    if not args.no_baseline:
        trees["baseline"] = args.baseline.resolve() if args.baseline else baseline_tree(args.base_commit)
        base = f"`{args.baseline}`" if args.baseline else f"commit {args.base_commit}"
    WORK.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="modelenv-", dir=WORK) as tmp:
            scratch = Path(tmp)
            archive = load_archive(scratch / "model.tar.gz", scratch)
            for _ in range(args.rounds):
                for label, tree in trees.items():
                    rows += environment_rows(tree, label, scratch)
            # Loads are short and the load average moves: the trees take turns, round after round.
            for _ in range(args.load_rounds):
                for label, tree in trees.items():
                    rows.append(first_load(tree, label, archive, scratch, unpack=False))
                rows.append(first_load(REPO_ROOT, "checkout", archive, scratch, unpack=True))
    finally:
        if not args.baseline and not args.keep_baseline and "baseline" in trees:
            subprocess.run(["git", "worktree", "remove", "--force", str(trees["baseline"])], cwd=REPO_ROOT)
    write_json(RESULTS_DIR / "modelenv.json", {"machine": facts, "baseline": base, "rows": rows})
    text = report(rows, facts, base)
    print(text)
    replace_section(REPO_ROOT / "BENCHMARKS.md", "modelenv", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
