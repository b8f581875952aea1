"""Thread pools per model worker (smkit.serving.threads): the rule, and what a real worker's handler sees."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from serving_harness import start_server

from smkit.cpus import available_cpus
from smkit.serving.threads import THREAD_VARIABLES, default_threads, plan_threads

# The handler reports its environment and the size of NumPy's OpenBLAS pool (the wheel's own library).
REPORTER = """
import ctypes
import glob
import json
import os

import numpy as np

NAMES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "LOKY_MAX_CPU_COUNT")


def openblas_threads():
    (lib,) = glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs", "libscipy_openblas*"))
    return ctypes.CDLL(lib).scipy_openblas_get_num_threads64_()


def model_fn(model_dir):
    return None


def transform_fn(model, data, content_type, accept):
    seen = {name: os.environ.get(name) for name in NAMES}
    seen["openblas"] = openblas_threads()
    return json.dumps(seen), "application/json"
"""
STARTED = re.compile(r"(\d+) workers? x (\d+) threads?")


def test_each_worker_gets_its_share_of_the_cpus() -> None:
    assert [default_threads(8, 2), default_threads(2, 2), default_threads(2, 4), default_threads(16, 1)] == [
        4,
        1,
        1,
        16,
    ]
    plan = plan_threads(8, 2, {"PATH": "/bin"})
    assert plan.threads == 4 and plan.source == "8 CPUs // 2 workers"
    assert plan.added == dict.fromkeys(THREAD_VARIABLES, "4")


def test_the_users_values_win_and_their_omp_num_threads_sizes_the_rest() -> None:
    plan = plan_threads(8, 2, {"OMP_NUM_THREADS": "3", "OPENBLAS_NUM_THREADS": "2"})
    assert plan.threads == 3 and plan.source == "OMP_NUM_THREADS=3 (yours)"
    assert "OMP_NUM_THREADS" not in plan.added and "OPENBLAS_NUM_THREADS" not in plan.added
    assert plan.added["MKL_NUM_THREADS"] == plan.added["LOKY_MAX_CPU_COUNT"] == "3"
    # OpenMP's per-level list: the first level is the pool; a value no library reads is passed on as is.
    assert plan_threads(8, 2, {"OMP_NUM_THREADS": "6,2"}).threads == 6
    odd = plan_threads(8, 2, {"OMP_NUM_THREADS": "all"})
    assert odd.threads == 4 and "OMP_NUM_THREADS" not in odd.added


def _model(tmp_path: Path) -> Path:
    model = tmp_path / "model"
    (model / "code").mkdir(parents=True)
    (model / "code" / "inference.py").write_text(REPORTER.lstrip())
    return model


def _seen(server, workers: int) -> list[dict[str, object]]:
    """What the handler reports, over a few requests per worker."""
    answers = [server.invoke("{}", "application/json").json() for _ in range(4 * workers)]
    return answers


@pytest.mark.parametrize("workers", [1, 2])
def test_smkit_serve_sets_the_pools_before_the_handler_imports_numpy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    for name in THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    share = max(1, available_cpus().count // workers)
    server = start_server(
        tmp_path, ["serve", "--model", str(_model(tmp_path)), "--workers", str(workers)], module="smkit.cli"
    )
    try:
        expected = {
            "OMP_NUM_THREADS": str(share),
            "OPENBLAS_NUM_THREADS": str(share),
            "MKL_NUM_THREADS": str(share),
            "LOKY_MAX_CPU_COUNT": str(share),
            "openblas": share,
        }
        assert all(seen == expected for seen in _seen(server, workers))
        match = STARTED.search(server.log())
        assert match is not None and match.groups() == (str(workers), str(share)), server.log()
    finally:
        assert server.stop() == 0


def test_smkit_serve_leaves_the_users_values_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    server = start_server(
        tmp_path,
        ["serve", "--model", str(_model(tmp_path)), "--workers", "2"],
        module="smkit.cli",
        env={"OMP_NUM_THREADS": "3", "OPENBLAS_NUM_THREADS": "2"},
    )
    try:
        expected = {
            "OMP_NUM_THREADS": "3",
            "OPENBLAS_NUM_THREADS": "2",
            "MKL_NUM_THREADS": "3",
            "LOKY_MAX_CPU_COUNT": "3",
            "openblas": 2,
        }
        assert all(seen == expected for seen in _seen(server, 2))
        assert "2 workers x 3 threads" in server.log() and "OMP_NUM_THREADS=3 (yours)" in server.log()
    finally:
        assert server.stop() == 0
