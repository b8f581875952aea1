"""The real example archives (built by `make package-model`) served by the runtime."""

from __future__ import annotations

import fcntl
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from serving_harness import REPO, start_server


def _example_archive(*names: str) -> Path:
    """``build/<names[0]>``, building every example archive first when one of ``names`` is missing.

    `make test` builds them before the tests; run on their own, two test processes may get here at once:
    the lock makes the second wait for the first one's build instead of writing the same files.
    """
    build = REPO / "build"
    build.mkdir(exist_ok=True)
    with (build / ".package-models.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not all((build / name).is_file() for name in names):
            subprocess.run(
                [sys.executable, "-m", "scripts.package_models", "--build-dir", "build"],
                cwd=REPO,
                check=True,
                timeout=600,
            )
    return build / names[0]


def test_real_tabular_example(tmp_path: Path) -> None:
    samples = REPO / "model_code" / "tabular" / "samples"
    expected = json.loads((samples / "expected.json").read_text())
    server = start_server(tmp_path, ["--model", str(_example_archive("model.tar.gz")), "--workers", "1"])
    try:
        for body, content_type in [
            ((samples / "request.csv").read_bytes(), "text/csv"),
            ((samples / "request.json").read_bytes(), "application/json"),
            ((samples / "request.npy").read_bytes(), "application/x-npy"),
        ]:
            response = server.invoke(body, content_type)
            assert response.status == 200, response.body
            np.testing.assert_allclose(
                response.json()["predictions"], expected["predictions"], rtol=expected["rtol"]
            )
        as_npy = server.invoke((samples / "request.csv").read_bytes(), "text/csv", "application/x-npy")
        assert np.load(io.BytesIO(as_npy.body), allow_pickle=False).shape == (10,)
    finally:
        server.stop()


def test_real_examples_share_a_multi_model_server(tmp_path: Path) -> None:
    models = _example_archive("models/tabular.tar.gz", "models/iris.tar.gz").parent
    server = start_server(tmp_path, ["--multi-model", str(models), "--workers", "1"])
    # Each first invocation loads its model on demand (iris imports scikit-learn): wait for the
    # server's answer as long as the server itself allows a load, not a guess of how long it takes.
    loading = server.answer_bound(loading=True)
    try:
        tabular = server.request(
            "POST",
            "/models/tabular.tar.gz/invoke",
            (REPO / "model_code" / "tabular" / "samples" / "request.csv").read_bytes(),
            {"Content-Type": "text/csv"},
            timeout=loading,
        )
        assert tabular.status == 200, tabular.body
        iris_sample = sorted((REPO / "model_code" / "iris" / "samples").glob("request.csv"))
        iris_body = iris_sample[0].read_bytes() if iris_sample else b"5.1,3.5,1.4,0.2"
        iris = server.request(
            "POST", "/models/iris.tar.gz/invoke", iris_body, {"Content-Type": "text/csv"}, timeout=loading
        )
        assert iris.status == 200, iris.body
    finally:
        server.stop()
