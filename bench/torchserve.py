"""TorchServe as a peer in ``bench.serving``: the server of AWS's PyTorch inference image.

TorchServe (Java front end, Python workers) runs the model's own ``code/inference.py`` through a custom
handler (bench/torchserve_handler.py) that calls the same hooks as the other peers (bench/peer_app.py's
``invoke``); with TorchServe's own batching (``batchSize`` / ``maxBatchDelay``) a batch goes through the
model's ``predict_batch_fn`` once, as smkit's batching does. Requests go to ``POST /invocations``, which
TorchServe routes to its only model (the SageMaker route it keeps beside ``/predictions``).

The model store holds the model as an unarchived model directory (``MAR-INF/MANIFEST.json``, the layout
``torch-model-archiver --archive-format no-archive`` writes: https://github.com/pytorch/serve/tree/master/model-archiver),
so no archiver is needed. Its venv (``bench/.venvs/torchserve``) holds TorchServe, the torch its workers
import, and the model's requirements; Java comes from ``PATH`` as for the toolkit.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from bench.common import LOOPBACK, PORTS_BELOW, BenchError, ServerSpec
from bench.envs import ensure_venv, model_requirements
from smkit.process import free_port

# The torch pin is the one the model benchmarks use (bench/shapes.py); TorchServe's worker imports torch
# and PyYAML (its metrics configuration), neither of which its package requires.
TORCHSERVE_PINS = ("torchserve==0.12.0", "torch==2.13.0", "pyyaml==6.0.4")
MODEL_NAME = "model"
BENCH_DIR = Path(__file__).resolve().parent
HANDLER = BENCH_DIR / "torchserve_handler.py"
PEER_APP = BENCH_DIR / "peer_app.py"


def torchserve_python(model_dir: Path) -> Path:
    """The TorchServe venv's python: the pins above and the model's own requirements."""
    if shutil.which("java") is None:
        raise BenchError("TorchServe needs Java (17 works): apt-get install openjdk-17-jre-headless")
    return ensure_venv("torchserve", [*TORCHSERVE_PINS, *model_requirements(model_dir)])


def model_store(model_dir: Path, store: Path) -> Path:
    """``store`` with ``model_dir`` as TorchServe's unarchived model ``MODEL_NAME`` and the handler beside it."""
    target = store / MODEL_NAME
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(model_dir, target)
    shutil.copy(HANDLER, target / HANDLER.name)
    shutil.copy(PEER_APP, target / PEER_APP.name)  # the handler calls the hooks as the other peers do
    manifest = {
        "runtime": "python",
        "model": {"modelName": MODEL_NAME, "handler": HANDLER.name, "modelVersion": "1.0"},
        "archiverVersion": "0.12.0",
    }
    (target / "MAR-INF").mkdir(exist_ok=True)
    (target / "MAR-INF" / "MANIFEST.json").write_text(json.dumps(manifest))
    return store


def torchserve_spec(
    *,
    name: str,
    model_dir: Path,
    work_dir: Path,
    port: int,
    workers: int,
    batch: tuple[int, int] | None = None,
) -> ServerSpec:
    """TorchServe on 127.0.0.1:``port`` with ``workers`` workers; ``batch``: (batchSize, maxBatchDelay ms)."""
    python = torchserve_python(model_dir)
    if work_dir.exists():
        shutil.rmtree(work_dir)
    tmp_dir = work_dir / "tmp"  # TorchServe's pid file lives in the temp dir: one per run, not the machine's
    tmp_dir.mkdir(parents=True)
    store = model_store(model_dir, work_dir / "store")
    size, delay = batch or (1, 100)
    models = {
        MODEL_NAME: {
            "1.0": {
                "defaultVersion": True,
                "marName": MODEL_NAME,
                "minWorkers": workers,
                "maxWorkers": workers,
                "batchSize": size,
                "maxBatchDelay": delay,
                "responseTimeout": 120,
            }
        }
    }
    config = {
        "inference_address": f"http://{LOOPBACK}:{port}",
        # The other two listeners on free ports of their own (their defaults, 8081/8082, may be taken).
        "management_address": f"http://{LOOPBACK}:{free_port(LOOPBACK, below=PORTS_BELOW)}",
        "metrics_address": f"http://{LOOPBACK}:{free_port(LOOPBACK, below=PORTS_BELOW)}",
        "model_store": str(store),
        "load_models": MODEL_NAME,
        "default_workers_per_model": str(workers),
        "disable_token_authorization": "true",
        "models": json.dumps(models),
    }
    properties = work_dir / "config.properties"
    properties.write_text("".join(f"{key}={value}\n" for key, value in config.items()))
    venv_bin = str(python.parent)
    env = {
        "TMPDIR": str(tmp_dir),
        "TEMP": str(tmp_dir),
        "PATH": f"{venv_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "VIRTUAL_ENV": str(python.parent.parent),
        "PYTHONPATH": "",
        "LOG_LOCATION": str(work_dir / "logs"),
        "METRICS_LOCATION": str(work_dir / "logs"),
    }
    argv = [
        str(python.parent / "torchserve"),
        "--start",
        "--foreground",
        "--ncs",
        "--disable-token-auth",
        "--ts-config",
        str(properties),
        "--model-store",
        str(store),
    ]
    return ServerSpec(name=name, argv=argv, port=port, env=env, cwd=work_dir)
