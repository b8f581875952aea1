"""The reference stack: sagemaker-inference 1.10.1 + multi-model-server 1.1.11 in a venv of its own.

The venv (``bench/.venvs/toolkit``, see :mod:`bench.envs`) is created on first use. The toolkit needs
Java (17 works), ``setuptools<82`` for ``pkg_resources`` and ``SAGEMAKER_BASE_DIR`` set before import
(docs/toolchain.md). The model's own ``code/requirements.txt`` is installed into the venv up front so
the toolkit's start-time ``pip install -r`` finds everything already satisfied.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from bench.common import BenchError, ServerSpec
from bench.envs import ensure_venv, model_requirements
from smkit import contract

TOOLKIT_PINS = ("sagemaker-inference==1.10.1", "multi-model-server==1.1.11", "setuptools<82")
LAUNCHER = Path(__file__).resolve().parent / "toolkit_launcher.py"


def toolkit_python(model_dir: Path) -> Path:
    """The toolkit venv's python, with the toolkit pins and ``model_dir``'s own requirements."""
    if shutil.which("java") is None:
        raise BenchError(
            "the toolkit reference needs Java (17 works): apt-get install openjdk-17-jre-headless"
        )
    return ensure_venv("toolkit", [*TOOLKIT_PINS, *model_requirements(model_dir)])


def toolkit_spec(
    *, name: str, model_dir: Path, work_dir: Path, port: int, workers: int, python: Path | None = None
) -> ServerSpec:
    """A ServerSpec that starts the toolkit + MMS on 127.0.0.1:``port`` serving ``model_dir``.

    ``model_dir`` is copied to ``work_dir/ml/model`` because the toolkit derives the model path from
    ``SAGEMAKER_BASE_DIR`` (``$SAGEMAKER_BASE_DIR/model``). The archive is served as built: the
    packager names its manifest ``smkit-manifest.json`` because MMS 1.1.11 takes a root ``MANIFEST.json``
    (any case) for a legacy MMS manifest and stops at start with a NullPointerException. ``python``: a
    venv that already holds the toolkit pins (default: the ``toolkit`` venv with the model's requirements).
    """
    python = python or toolkit_python(model_dir)
    base_dir = work_dir / "ml"
    target = base_dir / "model"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(model_dir, target)
    tmp_dir = work_dir / "tmp"
    tmp_dir.mkdir(parents=True, exist_ok=True)
    venv_bin = str(python.parent)
    env = {
        "SAGEMAKER_BASE_DIR": str(base_dir),
        contract.BIND_TO_PORT: str(port),
        contract.MODEL_SERVER_WORKERS: str(workers),
        # Keeps MMS's pid file and worker sockets out of the system temp dir shared with other runs.
        "TMPDIR": str(tmp_dir),
        "TEMP": str(tmp_dir),
        "PATH": f"{venv_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "VIRTUAL_ENV": str(python.parent.parent),
        "PYTHONPATH": "",
    }
    argv = [str(python), str(LAUNCHER), str(work_dir / "sagemaker-mms.properties")]
    return ServerSpec(name=name, argv=argv, port=port, env=env, cwd=work_dir)
