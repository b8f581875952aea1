"""Fixtures for the packager tests: a tiny stdlib-only model and the examples trained once per session."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MODEL_CODE = REPO / "model_code"

TINY_HANDLER = """\
import os


def model_fn(model_dir):
    with open(os.path.join(model_dir, "weights.txt")) as f:
        return float(f.read())


def input_fn(input_data, content_type):
    return input_data


def predict_fn(data, model):
    return data


def output_fn(prediction, accept):
    return prediction
"""


@dataclass
class Model:
    """A code folder and an artifacts folder on disk, plus an output folder that starts empty."""

    code: Path
    artifacts: Path
    out: Path

    def write(self, relative: str, text: str) -> Path:
        path = self.code / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def outputs(self) -> list[str]:
        """Everything in the output folder (hidden temp files included)."""
        return sorted(p.name for p in self.out.iterdir()) if self.out.exists() else []


@pytest.fixture
def tiny(tmp_path: Path) -> Model:
    """A valid stdlib-only model (fast to check): inference.py, empty requirements.txt, weights.txt."""
    model = Model(tmp_path / "code", tmp_path / "artifacts", tmp_path / "out")
    model.write("inference.py", TINY_HANDLER)
    model.write("requirements.txt", "")
    model.artifacts.mkdir()
    (model.artifacts / "weights.txt").write_text("1.5\n")
    (model.artifacts / "sub").mkdir()
    (model.artifacts / "sub" / "extra.bin").write_bytes(bytes(range(256)) * 5)
    model.out.mkdir()
    return model


@dataclass(frozen=True)
class Trained:
    """The example models trained into a temporary folder: ``artifacts[name]``, ``samples[name]``."""

    artifacts: dict[str, Path]
    samples: dict[str, Path]

    def code(self, name: str) -> Path:
        return MODEL_CODE / name / "code"


@pytest.fixture(scope="session")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Trained:
    """Run every training script once, into temporary folders (independent of `make package-model`)."""
    root = tmp_path_factory.mktemp("trained")
    art = {name: root / name / "artifacts" for name in ("tabular", "iris", "featurizer", "regressor")}
    samples = {name: root / name / "samples" for name in ("tabular", "iris", "featurizer")}
    runs = [
        ["tabular/train.py", "--artifacts", art["tabular"], "--samples", samples["tabular"]],
        ["iris/train.py", "--artifacts", art["iris"], "--samples", samples["iris"]],
        [
            "featurizer/train.py",
            "--featurizer-artifacts",
            art["featurizer"],
            "--regressor-artifacts",
            art["regressor"],
            "--samples",
            samples["featurizer"],
        ],
    ]
    procs = [subprocess.Popen([sys.executable, str(MODEL_CODE / r[0]), *map(str, r[1:])]) for r in runs]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0]
    return Trained(art, samples)


@pytest.fixture
def copy_tree() -> Callable[[Path, Path], Path]:
    def copy(src: Path, dest: Path) -> Path:
        shutil.copytree(src, dest)
        return dest

    return copy
