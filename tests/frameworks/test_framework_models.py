"""Real LightGBM, XGBoost and PyTorch (CPU) models, trained tiny in the test, served with default settings.

Each ``model_fn`` runs the model once (a warm-up), which starts the library's OpenMP thread pool in the
loading process: a worker forked after that point would hang on its first request. Two workers, the
framework only in the model's own environment (the interpreter ``SMKIT_WORKER_PYTHON`` and the
requirements layer in ``SMKIT_REQUIREMENTS_DIR``, as ``smkit serve`` runs a model): the first request is
answered and 100 requests at concurrency 4 all get 200 with the prediction the training script computed.
"""

from __future__ import annotations

import json
import sys
import textwrap
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
from framework_harness import run_in, write_requirements
from serving_harness import start_server, wait_ready

from smkit.modelenv import ModelEnvironment

ROW = "1.0,2.0,3.0,4.0"

TRAIN = {
    "lightgbm": """
        import lightgbm as lgb
        rng = np.random.default_rng(0)
        X = rng.normal(size=(200, 4))
        y = X @ np.array([1.0, 2.0, -1.0, 0.5]) + rng.normal(scale=0.1, size=200)
        params = {"objective": "regression", "num_leaves": 7, "verbose": -1}
        model = lgb.train(params, lgb.Dataset(X, y), num_boost_round=10)
        model.save_model(os.path.join(out, "model.txt"))
        expected = model.predict(ROW)
    """,
    "xgboost": """
        import xgboost as xgb
        rng = np.random.default_rng(0)
        X = rng.normal(size=(200, 4))
        y = X @ np.array([1.0, 2.0, -1.0, 0.5]) + rng.normal(scale=0.1, size=200)
        model = xgb.train({"max_depth": 3}, xgb.DMatrix(X, label=y), num_boost_round=10)
        model.save_model(os.path.join(out, "model.json"))
        expected = model.predict(xgb.DMatrix(ROW))
    """,
    "pytorch": """
        import torch
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
        torch.save(model.state_dict(), os.path.join(out, "model.pt"))
        with torch.no_grad():
            expected = model(torch.from_numpy(ROW).float()).numpy().ravel()
    """,
}

INFERENCE = {
    "lightgbm": """
        import os

        import lightgbm as lgb
        import numpy as np


        def model_fn(model_dir):
            model = lgb.Booster(model_file=os.path.join(model_dir, "model.txt"))
            model.predict(np.zeros((1, 4)))  # warm-up: OpenMP's threads start in this process
            return model


        def predict_fn(data, model):
            return model.predict(np.asarray(data, dtype=float).reshape(-1, 4))
    """,
    "xgboost": """
        import os

        import numpy as np
        import xgboost as xgb


        def model_fn(model_dir):
            model = xgb.Booster()
            model.load_model(os.path.join(model_dir, "model.json"))
            model.predict(xgb.DMatrix(np.zeros((1, 4))))  # warm-up: OpenMP's threads start here
            return model


        def predict_fn(data, model):
            return model.predict(xgb.DMatrix(np.asarray(data, dtype=float).reshape(-1, 4)))
    """,
    "pytorch": """
        import os

        import numpy as np
        import torch


        def model_fn(model_dir):
            model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
            model.load_state_dict(torch.load(os.path.join(model_dir, "model.pt"), weights_only=True))
            model.eval()
            with torch.no_grad():
                model(torch.zeros(1, 4))  # warm-up forward pass: intra-op threads start here
            return model


        def predict_fn(data, model):
            batch = torch.from_numpy(np.asarray(data, dtype=np.float32).reshape(-1, 4))
            with torch.no_grad():
                return model(batch).numpy().ravel()
    """,
}


def build_model(environment: ModelEnvironment, framework: str, model_dir: Path) -> list[float]:
    """Train the tiny model in the framework's environment; return its prediction for ROW."""
    write_requirements(model_dir, framework)
    (model_dir / "code" / "inference.py").write_text(textwrap.dedent(INFERENCE[framework]).lstrip())
    script = (
        "import json, os, sys\nimport numpy as np\n"
        f"out = sys.argv[1]\nROW = np.array([[{ROW}]])\n"
        + textwrap.dedent(TRAIN[framework])
        + "print(json.dumps([float(v) for v in np.asarray(expected).ravel()]))\n"
    )
    done = run_in(environment, ["-c", script, str(model_dir)], timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("framework", ["lightgbm", "xgboost", "pytorch"])
def test_framework_model_with_default_settings(
    framework: str, framework_env: Callable[[str], ModelEnvironment], tmp_path: Path
) -> None:
    environment = framework_env(framework)
    expected = build_model(environment, framework, tmp_path / "model")
    server = start_server(
        tmp_path,
        ["--model", str(tmp_path / "model")],
        env={
            "SMKIT_WORKER_PYTHON": environment.python,
            **environment.environ(),
            "SAGEMAKER_MODEL_SERVER_WORKERS": "2",
        },
        ready=False,
    )
    try:
        wait_ready(server, timeout=180)
        ready_at = time.monotonic()
        first = server.invoke(ROW, "text/csv", "application/json")
        print(f"{framework}: first answer {time.monotonic() - ready_at:.3f} s after /ping 200")  # reported
        assert first.status == 200, first.body
        assert first.json() == pytest.approx(expected, rel=1e-5)
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda _: server.invoke(ROW, "text/csv", "application/json"), range(100)))
        assert [a.status for a in answers] == [200] * 100
        assert all(a.body == first.body for a in answers)
        workers = [psutil.Process(pid) for pid in server.children()]
        assert len(workers) == 2
        for worker in workers:
            assert worker.cmdline()[0] == environment.python != sys.executable  # the model's, not the kit's
            rss = worker.memory_info().rss / 2**20
            print(f"{framework}: worker {worker.pid} RSS {rss:.0f} MiB")
    finally:
        assert server.stop() == 0
