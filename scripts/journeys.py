"""The documented journeys, run as a user runs them: from the built wheel, in an empty folder.

    python -m scripts.journeys [--python PYTHON ...] [--keep] [JOURNEY ...]

Builds the wheel from a copy of the checkout's files (tracked or not ignored: what a fresh clone holds; a
build in the checkout could take files from a stale ``build/lib``), installs ``smkit[all]`` from it with uv
into a fresh venv outside the checkout (versions constrained to uv.lock, as the own-project test does), and
runs each ``docs/journeys/NAME.sh`` with bash (``-euo pipefail``) in an empty folder of its own, with only
that venv's ``bin`` put first on ``PATH`` and ``PORT`` set to a free port. The scripts are the docs' own
blocks: README.md and docs/*.md include them verbatim, and ``tests/test_journeys.py`` fails when a doc's
block and its script differ. Prints each step's duration; exits non-zero on the first journey that fails,
with the last lines of its output.

``--python`` (repeatable) is an interpreter (a path or command) or a version such as ``3.13``, found among the
installed Pythons (``uv python find``: PATH and uv's own), else among pyenv's versions; never downloaded. The
wheel is built once; each Python gets a venv of its own and runs the journeys.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from smkit.process import free_port

REPO = Path(__file__).resolve().parents[1]
JOURNEYS = REPO / "docs" / "journeys"
UV = REPO / ".venv" / "bin" / "uv"


VERSION = re.compile(r"3\.\d+")
NO_DOWNLOADS = {"UV_PYTHON_DOWNLOADS": "never"}


def _uv() -> str:
    return str(UV) if UV.is_file() else (shutil.which("uv") or "uv")


def interpreter(spec: str) -> str:
    """``spec`` as an interpreter to create a venv with: a path or command as it is; a version (``3.13``) found
    by uv among the installed Pythons, else the newest of pyenv's ``versions/3.13.*``. Never downloads one."""
    if not VERSION.fullmatch(spec):
        return spec
    found = subprocess.run(
        [_uv(), "python", "find", "--no-project", spec],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **NO_DOWNLOADS},
    )
    if found.returncode == 0 and found.stdout.strip():
        return found.stdout.strip()
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates = sorted(
        root.glob(f"versions/{spec}.*/bin/python{spec}"),
        key=lambda p: [int(n) for n in re.findall(r"\d+", p.parts[-3])],
    )
    if candidates:
        return str(candidates[-1])
    raise SystemExit(
        f"Python {spec} is not installed: `uv python find {spec}` found none (downloads off) and {root}/versions "
        f"has no {spec}.*; install it (uv python install {spec}, pyenv install {spec}, or the system's package)"
    )


def _step(what: str, command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)
    print(f"{what}: {time.monotonic() - started:.1f} s", flush=True)
    if done.returncode != 0:
        sys.stderr.write(
            f"{what} failed (exit {done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-6000:]}\n"
        )
        raise SystemExit(1)
    return done


def copy_checkout(target: Path) -> Path:
    """The checkout's files (tracked, or untracked and not ignored) copied under ``target``."""
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target / name)
    return target


def build_wheel(scratch: Path) -> Path:
    """The wheel built from a copy of the checkout under ``scratch``."""
    source = copy_checkout(scratch / "source")
    _step(
        "build the wheel",
        [_uv(), "build", "--wheel", "--quiet", "-o", str(scratch / "dist"), str(source)],
        env={**os.environ, **NO_DOWNLOADS},
    )
    (wheel,) = (scratch / "dist").glob("smkit-*.whl")
    print(f"wheel {wheel.name}: {wheel.stat().st_size / 1e6:.2f} MB", flush=True)
    return wheel


def install(scratch: Path, wheel: Path, python: str) -> Path:
    """A fresh venv ``scratch/venv`` on ``python`` with the wheel's ``smkit[all]``; its ``bin`` folder."""
    env = {**os.environ, **NO_DOWNLOADS}
    exported = _step(
        "export the lock's versions",
        [
            _uv(),
            "export",
            "--frozen",
            "--no-hashes",
            "--no-emit-project",
            "--extra",
            "all",
            "--directory",
            str(REPO),
        ],
        env=env,
    )
    constraints = scratch / "constraints.txt"
    constraints.write_text(exported.stdout)
    venv = scratch / "venv"
    _step("create the venv", [_uv(), "venv", "--quiet", "--python", python, str(venv)], env=env)
    done = subprocess.run(
        [str(venv / "bin" / "python"), "--version"], capture_output=True, text=True, check=True
    )
    print(f"venv on {done.stdout.strip()} ({python})", flush=True)
    _step(
        'install "smkit[all]" from the wheel',
        [_uv(), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"),
         "--constraint", str(constraints), f"smkit[all] @ {wheel.as_uri()}"],
        env=env,
    )  # fmt: skip
    return venv / "bin"


def user_environment(bin_dir: Path) -> dict[str, str]:
    """A user's shell with the venv activated: no PYTHONPATH into the checkout, bytecode written."""
    dropped = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    return {
        **env,
        "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}",
        "VIRTUAL_ENV": str(bin_dir.parent),
        "PYTHONUNBUFFERED": "1",
    }


def run_journey(script: Path, bin_dir: Path, scratch: Path, label: str = "") -> None:
    """``script`` in an empty folder of its own; raises SystemExit on failure."""
    folder = scratch / "journeys" / script.stem
    folder.mkdir(parents=True)
    env = {**user_environment(bin_dir), "PORT": str(free_port())}
    _step(f"journey {script.stem}{label}", ["bash", "-euo", "pipefail", str(script)], cwd=folder, env=env)
    for path in folder.rglob("*"):  # nothing the journey wrote names the checkout
        if (
            path.is_file()
            and path.suffix in (".py", ".yaml", ".json", ".txt")
            and "cdk.out" not in path.parts
        ) and str(REPO) in path.read_text(encoding="utf-8", errors="replace"):
            sys.stderr.write(f"journey {script.stem}: {path} names the checkout {REPO}\n")
            raise SystemExit(1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("journeys", nargs="*", help="names of docs/journeys/*.sh (default: all)")
    parser.add_argument(
        "--python",
        action="append",
        help="the interpreter of the fresh venv: a path, a command or a version (3.13); repeatable "
        "(default: this one)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder (its path is printed)")
    args = parser.parse_args(argv)
    scripts = sorted(JOURNEYS.glob("*.sh"))
    if args.journeys:
        scripts = [JOURNEYS / f"{name}.sh" for name in args.journeys]
    pythons = [interpreter(spec) for spec in args.python or [sys.executable]]
    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="smkit-journeys-"))
    try:
        wheel = build_wheel(scratch)
        for i, python in enumerate(pythons):
            own = scratch / f"python-{i}"
            own.mkdir()
            bin_dir = install(own, wheel, python)
            label = f" ({python})" if len(pythons) > 1 else ""
            for script in scripts:
                run_journey(script, bin_dir, own, label)
    finally:
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    runs = len(scripts) * len(pythons)
    print(f"journeys: {runs} passed in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
