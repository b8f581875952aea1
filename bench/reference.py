"""The reference stack: sagemaker-inference 1.10.1 + multi-model-server 1.1.11 in a venv of its own.

The venv lives under ``bench/.venvs/`` (git-ignored) and is created on first use. The toolkit needs
Java (17 works), ``setuptools<82`` for ``pkg_resources`` and ``SAGEMAKER_BASE_DIR`` set before import
(REFERENCE.md §8). The model's own ``code/requirements.txt`` is installed into the venv up front so
the toolkit's start-time ``pip install -r`` finds everything already satisfied.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import venv
from pathlib import Path

from bench.common import REPO_ROOT, BenchError, ServerSpec

TOOLKIT_PINS = ("sagemaker-inference==1.10.1", "multi-model-server==1.1.11", "setuptools<82")
VENV_DIR = REPO_ROOT / "bench" / ".venvs" / "toolkit"
LAUNCHER = Path(__file__).resolve().parent / "toolkit_launcher.py"


def _stamp(requirements: list[str]) -> str:
    return hashlib.sha256("\n".join([*TOOLKIT_PINS, *requirements]).encode()).hexdigest()


def ensure_venv(model_dir: Path) -> Path:
    """Create or refresh the toolkit venv for ``model_dir``'s requirements; return its python."""
    requirements_file = model_dir / "code" / "requirements.txt"
    requirements = []
    if requirements_file.is_file():
        requirements = [
            line.strip()
            for line in requirements_file.read_text().splitlines()
            if line.strip() and not line.strip().startswith("#")
        ]
    python = VENV_DIR / "bin" / "python"
    stamp_file = VENV_DIR / ".bench-stamp"
    stamp = _stamp(requirements)
    if python.exists() and stamp_file.is_file() and stamp_file.read_text() == stamp:
        return python
    if shutil.which("java") is None:
        raise BenchError(
            "the toolkit reference needs Java (17 works): apt-get install openjdk-17-jre-headless"
        )
    if not python.exists():
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV_DIR)
    cmd = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    result = subprocess.run([*cmd, *TOOLKIT_PINS, *requirements], capture_output=True, text=True)
    if result.returncode != 0:
        raise BenchError(
            f"could not install the toolkit reference into {VENV_DIR.relative_to(REPO_ROOT)}: "
            f"{result.stderr.strip()[-2000:]}"
        )
    stamp_file.write_text(stamp)
    return python


def _mms_manifest(directory: str, names: list[str]) -> set[str]:
    return {name for name in names if name.lower() == "manifest.json"}


def toolkit_spec(*, name: str, model_dir: Path, work_dir: Path, port: int, workers: int) -> ServerSpec:
    """A ServerSpec that starts the toolkit + MMS on 127.0.0.1:``port`` serving ``model_dir``.

    ``model_dir`` is copied to ``work_dir/ml/model`` because the toolkit derives the model path from
    ``SAGEMAKER_BASE_DIR`` (``$SAGEMAKER_BASE_DIR/model``). The copy leaves out a top-level
    ``manifest.json`` (smkit's packager writes one): MMS 1.1.11 searches the model directory for
    ``MANIFEST.json`` case-insensitively, takes it for a legacy MMS manifest and stops at start with a
    NullPointerException in ``LegacyManifest.migrate``.
    """
    python = ensure_venv(model_dir)
    base_dir = work_dir / "ml"
    target = base_dir / "model"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(model_dir, target, ignore=_mms_manifest)
    tmp_dir = work_dir / "tmp"
    tmp_dir.mkdir(parents=True, exist_ok=True)
    venv_bin = str(python.parent)
    env = {
        "SAGEMAKER_BASE_DIR": str(base_dir),
        "SAGEMAKER_BIND_TO_PORT": str(port),
        "SAGEMAKER_MODEL_SERVER_WORKERS": str(workers),
        # Keeps MMS's pid file and worker sockets out of the shared /tmp.
        "TMPDIR": str(tmp_dir),
        "TEMP": str(tmp_dir),
        "PATH": f"{venv_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "VIRTUAL_ENV": str(VENV_DIR),
        "PYTHONPATH": "",
    }
    argv = [str(python), str(LAUNCHER), str(work_dir / "sagemaker-mms.properties")]
    return ServerSpec(name=name, argv=argv, port=port, env=env, cwd=work_dir)
