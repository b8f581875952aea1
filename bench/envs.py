"""Benchmark venvs under ``bench/.venvs/`` (git-ignored): each server runs with only what it needs.

Two are built on first use and rebuilt when their requirement list changes:

- ``toolkit``: sagemaker-inference + multi-model-server + the model's ``code/requirements.txt``.
- ``smkit-image``: what ``container/Dockerfile`` installs (``container/requirements.txt``) + the
  model's ``code/requirements.txt``; smkit itself is imported from the source tree (``PYTHONPATH``),
  as the image installs it with ``--no-deps``. Running our server from the development venv instead
  would charge it for packages the image does not have (e.g. pandas, which scikit-learn imports at
  start when present).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import venv
from collections.abc import Sequence
from pathlib import Path

from bench.common import REPO_ROOT, BenchError

VENVS_DIR = REPO_ROOT / "bench" / ".venvs"
IMAGE_REQUIREMENTS = REPO_ROOT / "container" / "requirements.txt"


def read_requirements(path: Path) -> list[str]:
    """Requirement lines of ``path`` (comments and blanks dropped); [] when the file is absent."""
    if not path.is_file():
        return []
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def model_requirements(model_dir: Path) -> list[str]:
    """The model's own ``code/requirements.txt`` (docs/hosting-contract.md layout)."""
    return read_requirements(model_dir / "code" / "requirements.txt")


def ensure_venv(name: str, requirements: Sequence[str]) -> Path:
    """Create ``bench/.venvs/NAME`` with exactly ``requirements`` installed (once); return its python."""
    root = VENVS_DIR / name
    python = root / "bin" / "python"
    stamp_file = root / ".bench-stamp"
    stamp = hashlib.sha256("\n".join(requirements).encode()).hexdigest()
    if python.exists() and stamp_file.is_file() and stamp_file.read_text() == stamp:
        return python
    print(f"installing {len(requirements)} requirements into bench/.venvs/{name} ...", flush=True)
    # Always from empty: packages left over from an earlier requirement list would change the numbers.
    venv.EnvBuilder(with_pip=True, clear=True).create(root)
    cmd = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *requirements]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise BenchError(
            f"could not install {', '.join(requirements)} into bench/.venvs/{name}: "
            f"{result.stderr.strip()[-2000:]}"
        )
    stamp_file.write_text(stamp)
    return python


def smkit_image_python(model_dir: Path) -> Path:
    """The interpreter of the image-like venv for serving ``model_dir`` with smkit."""
    packages = read_requirements(IMAGE_REQUIREMENTS)
    if not packages:
        raise BenchError(f"{IMAGE_REQUIREMENTS.relative_to(REPO_ROOT)} is missing or empty")
    return ensure_venv("smkit-image", [*packages, *model_requirements(model_dir)])


def resolve_smkit_python(choice: str, model_dir: Path) -> Path:
    """``--smkit-python``: ``image`` (the image-like venv) or the path of an interpreter to use as is."""
    if choice == "image":
        return smkit_image_python(model_dir)
    python = Path(choice)
    if not python.is_file():
        raise BenchError(f"--smkit-python {choice}: no such interpreter; pass 'image' or a python path")
    return python


REPORTED_PACKAGES = (
    "uvicorn",
    "numpy",
    "scipy",
    "scikit-learn",
    "narwhals",
    "pandas",
    "sagemaker-inference",
    "multi-model-server",
    "torchserve",
    "torch",
)
_LIST_DISTRIBUTIONS = (
    "import importlib.metadata as m, json; "
    "print(json.dumps({d.metadata['Name'].lower().replace('_', '-'): d.version for d in m.distributions()}))"
)


def package_versions(python: Path) -> dict[str, str]:
    """Versions of the packages that matter to the numbers, as installed for ``python``."""
    done = subprocess.run([str(python), "-c", _LIST_DISTRIBUTIONS], capture_output=True, text=True)
    if done.returncode != 0:
        return {}
    installed: dict[str, str] = json.loads(done.stdout)
    return {name: installed[name] for name in REPORTED_PACKAGES if name in installed}


def java_version() -> str:
    """First line of ``java -version`` (the reference's JVM), or "" without Java."""
    try:
        done = subprocess.run(["java", "-version"], capture_output=True, text=True)
    except OSError:
        return ""
    return (done.stderr or done.stdout).strip().splitlines()[0] if (done.stderr or done.stdout) else ""
