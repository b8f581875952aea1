"""Thread pools per model worker (smkit.serving.front.threads): the rule, and what a real worker's handler sees."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from serving_harness import start_server

from smkit.cpus import available_cpus
from smkit.serving.front.threads import THREAD_VARIABLES, plan_threads

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


def test_each_worker_gets_one_thread_per_pool_by_default() -> None:
    for cpus, workers in ((8, 2), (2, 2), (16, 1)):
        plan = plan_threads(cpus, workers, {"PATH": "/bin"})
        assert plan.threads == 1 and plan.source == "1 per worker by default" and not plan.oversubscribed
        assert plan.added == dict.fromkeys(THREAD_VARIABLES, "1")


def test_the_users_values_win_and_their_omp_num_threads_sizes_the_rest() -> None:
    plan = plan_threads(8, 2, {"OMP_NUM_THREADS": "3", "OPENBLAS_NUM_THREADS": "2"})
    assert plan.threads == 3 and plan.source == "OMP_NUM_THREADS=3 (yours)"
    assert "OMP_NUM_THREADS" not in plan.added and "OPENBLAS_NUM_THREADS" not in plan.added
    assert plan.added["MKL_NUM_THREADS"] == plan.added["LOKY_MAX_CPU_COUNT"] == "3"
    # OpenMP's per-level list: the first level is the pool; a value no library reads is passed on as is.
    assert not plan.oversubscribed  # 2 workers x 3 threads on 8 CPUs
    nested = plan_threads(8, 2, {"OMP_NUM_THREADS": "6,2"})
    assert nested.threads == 6 and nested.oversubscribed  # 12 threads on 8 CPUs: the server warns
    odd = plan_threads(8, 2, {"OMP_NUM_THREADS": "all"})
    assert odd.threads == 1 and "OMP_NUM_THREADS" not in odd.added


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
def test_smkit_serve_gives_every_worker_one_thread_before_the_handler_imports_numpy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    for name in THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    server = start_server(
        tmp_path, ["serve", "--model", str(_model(tmp_path)), "--workers", str(workers)], module="smkit.cli"
    )
    try:
        expected = {
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "LOKY_MAX_CPU_COUNT": "1",
            "openblas": 1,
        }
        assert all(seen == expected for seen in _seen(server, workers))
        match = STARTED.search(server.log())
        assert match is not None and match.groups() == (str(workers), "1"), server.log()
        cpus = available_cpus()
        assert f"{cpus.count} CPU" in server.log()
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
        log = server.log()
        assert "2 workers x 3 threads" in log and "OMP_NUM_THREADS=3 (yours)" in log
        # 6 threads on this machine's CPUs: more than it has (2 in CI) is reported, fewer is not.
        assert ("more than the" in log) == (available_cpus().count < 6)
    finally:
        assert server.stop() == 0
