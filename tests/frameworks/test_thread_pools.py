"""What a PyTorch model's workers see of their thread pools, in ``smkit serve`` and in the local endpoint.

The handler reports ``OMP_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS``, ``torch.get_num_threads()`` (PyTorch's
intra-op pool) and the size of NumPy's OpenBLAS pool. Unset by the user, every one is 1 (one thread per
pool in every worker, docs/serving-runtime.md); set by the user, they are the user's.
The model runs in its own environment (the scaffold's ``torch`` requirement), as users run one.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from framework_harness import write_requirements
from serving_harness import REPO, start_server, wait_ready

from smkit.config import load_config
from smkit.local import LocalEndpoint
from smkit.modelenv import ModelEnvironment
from smkit.serving.front.threads import THREAD_VARIABLES

REPORTER = """
import ctypes
import glob
import json
import os

import numpy as np
import torch


def openblas_threads():
    (lib,) = glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs", "libscipy_openblas*"))
    return ctypes.CDLL(lib).scipy_openblas_get_num_threads64_()


def model_fn(model_dir):
    return None


def transform_fn(model, data, content_type, accept):
    gate = json.loads(data).get("gate")
    if gate:  # held until the test opens the FIFO for writing and closes it: this worker stays busy
        with open(gate) as fifo:
            fifo.read()
    seen = {name: os.environ.get(name) for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    seen.update(torch=torch.get_num_threads(), openblas=openblas_threads(), pid=os.getpid())
    return json.dumps(seen), "application/json"
"""
STARTED = re.compile(r"(\d+) workers? x (\d+) threads?")
USERS = {"OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "1"}
# PyTorch 2.13 caps its intra-op pool at the host's CPU count, whatever OMP_NUM_THREADS asks.
USERS_SEEN = {
    "OMP_NUM_THREADS": "2",
    "OPENBLAS_NUM_THREADS": "1",
    "torch": min(2, os.cpu_count() or 1),
    "openblas": 1,
}


def pools_of(threads: int) -> dict[str, object]:
    return {
        "OMP_NUM_THREADS": str(threads),
        "OPENBLAS_NUM_THREADS": str(threads),
        "torch": threads,
        "openblas": threads,
    }


@pytest.fixture
def model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "model"
    write_requirements(folder, "pytorch")  # the scaffold's bytes: the cached PyTorch environment
    (folder / "code" / "inference.py").write_text(textwrap.dedent(REPORTER).lstrip())
    return folder


def test_smkit_serve(model: Path, tmp_path: Path, framework_env: Callable[[str], ModelEnvironment]) -> None:
    """Both workers report their pools: the first request holds one worker (a FIFO the test opens), so the
    second is served by the other one (an idle worker takes a request; docs/serving-runtime.md)."""
    framework_env("pytorch")  # built (or found) once for every framework test
    gate = tmp_path / "gate"
    for extra, expected in (({}, pools_of(1)), (USERS, USERS_SEEN)):
        os.mkfifo(gate)
        server = start_server(
            tmp_path,
            ["serve", "--model", str(model), "--workers", "2"],
            module="smkit.cli",
            env=extra,
            ready=False,
        )
        try:
            wait_ready(server, timeout=180)
            with ThreadPoolExecutor(1) as pool:
                held = pool.submit(server.invoke, json.dumps({"gate": str(gate)}), "application/json")
                with gate.open("w"):  # returns once the held request runs in a worker
                    other = server.invoke("{}", "application/json").json()
                first = held.result(timeout=60).json()
            assert first.pop("pid") != other.pop("pid"), server.log()
            assert [first, other] == [expected] * 2, server.log()
        finally:
            gate.unlink()
            assert server.stop() == 0


def test_local_endpoint(
    model: Path, tmp_path: Path, framework_env: Callable[[str], ModelEnvironment]
) -> None:
    """A Direct multi-container endpoint from a config in the user's folder: one container with the
    user's variables in its environment, one without."""
    framework_env("pytorch")
    config = tmp_path / "threads.yaml"
    container = {"model_data": {"source": "prefix", "path": "model"}}
    config.write_text(
        yaml.safe_dump(
            {
                "name": "threads",
                "environment": "dev",
                "image": {"source": "build", "context": str(REPO), "dockerfile": "container/Dockerfile"},
                "model": {
                    "network_isolation": False,
                    "inference_mode": "direct",
                    "containers": [
                        {"name": "plain", "hostname": "plain", **container},
                        {"name": "mine", "hostname": "mine", "environment": USERS, **container},
                    ],
                },
                "endpoint": {
                    "type": "multi-container",
                    "variants": [
                        {"name": "main", "instance_type": "ml.m5.large", "initial_instance_count": 1}
                    ],
                },
            }
        )
    )
    cfg = load_config(config)
    logs = tmp_path / "logs"
    with LocalEndpoint(cfg, root=tmp_path, log_dir=logs) as endpoint:
        runtime = endpoint.client()

        def seen(hostname: str) -> dict[str, object]:
            answer = runtime.invoke_endpoint(
                EndpointName=cfg.name,
                TargetContainerHostname=hostname,
                ContentType="application/json",
                Body=b"{}",
            )
            answer = json.loads(answer["Body"].read())
            del answer["pid"]
            return answer

        (log,) = logs.glob("*plain*.log")
        match = STARTED.search(log.read_text())
        assert match is not None, log.read_text()
        assert match.group(2) == "1", log.read_text()
        assert seen("plain") == pools_of(1)
        assert seen("mine") == USERS_SEEN
