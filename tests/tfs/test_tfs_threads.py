"""TensorFlow's thread pools in the TF Serving form follow the SageMaker TensorFlow Serving container.

The container sets ``OMP_NUM_THREADS=1`` when unset and hands ``SAGEMAKER_TFS_INTRA_OP_PARALLELISM`` /
``SAGEMAKER_TFS_INTER_OP_PARALLELISM`` to TensorFlow Serving (smkit/tfs/threads.py). A handler reports
what TensorFlow in the serving process was given.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import tfs_harness
from tfs_harness import model_dir

REPORTER = """
import json
import os

import tensorflow as tf


def handler(data, context):
    return json.dumps({
        "omp": os.environ.get("OMP_NUM_THREADS"),
        "intra": tf.config.threading.get_intra_op_parallelism_threads(),
        "inter": tf.config.threading.get_inter_op_parallelism_threads(),
    }), "application/json"
"""


def _report(saved_models: Path, tmp_path: Path, env: dict[str, str]) -> tuple[dict[str, object], str]:
    root = model_dir(tmp_path / "model", saved_models, ("half",), {"inference.py": REPORTER})
    server = tfs_harness.start(tmp_path, root, env=env)
    try:
        reply = server.invoke("{}")
        assert reply.status == 200, reply.text
        return reply.json(), server.log()
    finally:
        server.stop()


def test_defaults_are_the_containers(
    saved_models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "OMP_NUM_THREADS",
        "SAGEMAKER_TFS_INTRA_OP_PARALLELISM",
        "SAGEMAKER_TFS_INTER_OP_PARALLELISM",
    ):
        monkeypatch.delenv(name, raising=False)
    report, log = _report(saved_models, tmp_path, {})
    assert report == {"omp": "1", "intra": 0, "inter": 0}
    assert "OMP_NUM_THREADS=1 (the container default)" in log


def test_the_users_values_are_applied_and_kept(saved_models: Path, tmp_path: Path) -> None:
    env = {
        "OMP_NUM_THREADS": "3",
        "SAGEMAKER_TFS_INTRA_OP_PARALLELISM": "2",
        "SAGEMAKER_TFS_INTER_OP_PARALLELISM": "1",
    }
    report, log = _report(saved_models, tmp_path, env)
    assert report == {"omp": "3", "intra": 2, "inter": 1}
    assert "intra-op 2 (SAGEMAKER_TFS_INTRA_OP_PARALLELISM), inter-op 1" in log


def test_a_bad_value_stops_the_server_naming_it(saved_models: Path, tmp_path: Path) -> None:
    root = model_dir(tmp_path / "model", saved_models, ("half",))
    proc = subprocess.run(
        [sys.executable, "-m", "smkit.serving", "--model", str(root), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "SAGEMAKER_TFS_INTRA_OP_PARALLELISM": "four"},
    )
    assert proc.returncode == 1
    assert "SAGEMAKER_TFS_INTRA_OP_PARALLELISM='four' is not a thread count" in proc.stderr
