"""A venv with the model frameworks, built once per requirement list under build/test-envs/ (git-ignored).

The kit's own environment never gets LightGBM, XGBoost or PyTorch: the serving tests run the model
workers with this venv's interpreter (``SMKIT_WORKER_PYTHON``), as a model's own environment would be.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENVS = REPO / "build" / "test-envs"
# xgboost-cpu: the same library as xgboost without the ~300 MB of NCCL/CUDA the xgboost wheel pulls in.
# torch 2.13.0 comes from the CPU wheel in pip's find-links (the index would give a multi-GB CUDA build).
REQUIREMENTS = (
    "numpy==2.4.6",
    "lightgbm==4.7.0",
    "xgboost-cpu==3.2.0",
    "torch==2.13.0",
)


def ensure_env(requirements: tuple[str, ...] = REQUIREMENTS) -> Path:
    """The python of a venv holding exactly ``requirements`` (built on first use, then reused)."""
    key = hashlib.sha256("\n".join(requirements).encode()).hexdigest()[:16]
    root = ENVS / key
    python = root / "bin" / "python"
    ENVS.mkdir(parents=True, exist_ok=True)
    with open(ENVS / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # pytest-xdist workers wait for the one that builds
        if (root / ".complete").is_file():
            return python
        shutil.rmtree(root, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *requirements],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            shutil.rmtree(root, ignore_errors=True)
            raise RuntimeError(f"pip install {' '.join(requirements)} failed:\n{done.stderr[-3000:]}")
        (root / ".complete").write_text("\n".join(requirements) + "\n")
    return python
