"""Fixtures for the TF Serving form: SavedModels built with TensorFlow in tmp dirs, servers on 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import tfs_harness
from tfs_harness import EXAMPLE, TfsServer, model_dir

SMKIT = str(Path(sys.executable).parent / "smkit")


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


@pytest.fixture(scope="session")
def insurance_archive(insurance: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The trained example packaged with ``smkit package``: the archive and the command's output."""
    archive = tmp_path_factory.mktemp("insurance_archive") / "tf_insurance.tar.gz"
    done = subprocess.run(
        [
            SMKIT,
            "package",
            "--code",
            str(EXAMPLE / "code"),
            "--artifacts",
            str(insurance / "artifacts"),
            "--output",
            str(archive),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return archive, done.stdout
