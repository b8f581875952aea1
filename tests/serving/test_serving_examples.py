"""The real example archives (built by `make package-model`) served by the runtime."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from serving_harness import REPO, start_server


def _example_archive(name: str) -> Path:
    path = REPO / "build" / name
    if not path.exists():  # `make test` builds them first; build them here when run on their own
        subprocess.run(
            [sys.executable, "-m", "scripts.package_models", "--build-dir", "build"],
            cwd=REPO,
            check=True,
            timeout=600,
        )
    return path


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
    _example_archive("model.tar.gz")
    server = start_server(tmp_path, ["--multi-model", str(REPO / "build" / "models"), "--workers", "1"])
    try:
        tabular = server.request(
            "POST",
            "/models/tabular.tar.gz/invoke",
            (REPO / "model_code" / "tabular" / "samples" / "request.csv").read_bytes(),
            {"Content-Type": "text/csv"},
        )
        assert tabular.status == 200, tabular.body
        iris_sample = sorted((REPO / "model_code" / "iris" / "samples").glob("request.csv"))
        iris_body = iris_sample[0].read_bytes() if iris_sample else b"5.1,3.5,1.4,0.2"
        iris = server.request("POST", "/models/iris.tar.gz/invoke", iris_body, {"Content-Type": "text/csv"})
        assert iris.status == 200, iris.body
    finally:
        server.stop()
