"""Fixtures for the TF Serving form: SavedModels built with TensorFlow in tmp dirs, servers on 127.0.0.1."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import tfs_harness
from built_once import built_once, mark_built
from tfs_harness import EXAMPLE, TfsServer, model_dir

SMKIT = str(Path(sys.executable).parent / "smkit")


@pytest.fixture(scope="session")
def saved_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``half`` (versions 1 and 2), ``binary`` and ``classreg`` SavedModels, built in a child process
    (once per run: tests/built_once.py)."""
    with built_once(tmp_path_factory, "saved_models") as (shared, built):
        root = shared / "models"
        if not built:
            shutil.rmtree(root, ignore_errors=True)
            root.mkdir()
            code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import tfs_models; tfs_models.write_models(__import__('pathlib').Path({str(root)!r}))"
            subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
            mark_built(shared)
    return root


@pytest.fixture(scope="session")
def insurance(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example trained into a tmp dir: ``artifacts/insurance/1`` and ``samples/`` (once per run)."""
    with built_once(tmp_path_factory, "insurance") as (root, built):
        if not built:
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
            mark_built(root)
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
    """The trained example packaged with ``smkit package``: the archive and the command's output (once
    per run)."""
    with built_once(tmp_path_factory, "insurance_archive") as (shared, built):
        archive, output = shared / "tf_insurance.tar.gz", shared / "package-output.txt"
        if not built:
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
            output.write_text(done.stdout)
            mark_built(shared)
    return archive, output.read_text()
