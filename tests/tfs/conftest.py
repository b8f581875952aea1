"""Fixtures for the TF Serving form: SavedModels built with TensorFlow in tmp dirs, servers on 127.0.0.1."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import tfs_harness
from tfs_harness import TfsServer

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "model_code" / "tf_insurance"


@pytest.fixture(scope="session")
def saved_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``half`` (versions 1 and 2), ``binary`` and ``classreg`` SavedModels, built in a child process."""
    root = tmp_path_factory.mktemp("saved_models")
    code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import tfs_models; tfs_models.write_models(__import__('pathlib').Path({str(root)!r}))"
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    return root


@pytest.fixture(scope="session")
def insurance(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example trained into a tmp dir: ``artifacts/insurance/1`` and ``samples/``."""
    root = tmp_path_factory.mktemp("insurance")
    subprocess.run(
        [
            sys.executable,
            str(EXAMPLE / "train.py"),
            "--artifacts",
            str(root / "artifacts"),
            "--samples",
            str(root / "samples"),
        ],
        check=True,
        capture_output=True,
    )
    return root


def model_dir(
    root: Path, saved_models: Path, names: tuple[str, ...], code: dict[str, str] | None = None
) -> Path:
    """A model directory holding the named SavedModels and, if given, ``code/`` files."""
    for name in names:
        shutil.copytree(saved_models / name, root / name)
    for rel, text in (code or {}).items():
        path = root / "code" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def server_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tfs_servers")


@pytest.fixture(scope="module")
def plain_server(saved_models: Path, server_tmp: Path) -> Iterator[TfsServer]:
    """No inference.py: nginx's conversions in front of three models, ``half`` the default model."""
    root = model_dir(server_tmp / "plain", saved_models, ("half", "binary", "classreg"))
    server = tfs_harness.start(
        server_tmp,
        tfs_harness.tarball(root, server_tmp / "plain.tar.gz"),
        env={"SAGEMAKER_TFS_DEFAULT_MODEL_NAME": "half"},
    )
    yield server
    server.stop()
