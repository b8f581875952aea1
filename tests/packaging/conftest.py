"""Fixtures for the packager tests: a tiny stdlib-only model and the examples trained once per session."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from pkg_harness import MODEL_CODE, TINY_HANDLER, Model, Trained

__all__ = ["MODEL_CODE", "TINY_HANDLER", "Model", "Trained"]


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
