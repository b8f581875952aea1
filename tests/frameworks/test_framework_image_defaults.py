"""The PyTorch and XGBoost images' default handlers (``SMKIT_FRAMEWORK``), against those images' own code.

Each expected answer is computed in the framework's environment with the image's code path, quoted:

- PyTorch (sagemaker-pytorch-inference 2.0.25, ``default_pytorch_inference_handler.py``): the toolkit's
  ``np.genfromtxt(StringIO(body), dtype=None, delimiter=",")``, then ``torch.FloatTensor(array)``;
  ``model.eval()`` and ``model(data)`` under ``torch.no_grad()``; a tensor answered as ``tolist()``.
- XGBoost (aws/sagemaker-xgboost-container ``encoder.csv_to_dmatrix``, ``serving.default_predict_fn``):
  each CSV line split on the delimiter, empty fields ``nan``, ``np.array(...).astype(None)`` into a
  ``DMatrix``; ``model.predict(data, validate_features=False)``.

Text in a CSV body fails in both images' decoders: 500 on PyTorch (``FloatTensor`` of a structured
array), 400 from smkit where the XGBoost image's ``astype`` raises (docs/handler-semantics.md lists it).
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from framework_harness import run_in, write_requirements
from serving_harness import Server, start_server, wait_ready

from smkit.modelenv import ModelEnvironment

pytestmark = pytest.mark.frameworks

TORCH_HANDLER = """
import torch


class Weighted(torch.nn.Module):
    def forward(self, x):
        return x @ torch.tensor([[1.0], [-2.0], [0.5]])


def model_fn(model_dir):
    return Weighted()
"""

TORCH_EXPECTED = """
import io, json, sys
import numpy as np, torch
sys.path.insert(0, sys.argv[1])
from inference import Weighted
out = {}
for body in json.loads(sys.argv[2]):
    try:
        data = torch.FloatTensor(np.genfromtxt(io.StringIO(body), dtype=None, delimiter=","))
        model = Weighted()
        with torch.no_grad():
            model.eval()
            out[body] = model(data).detach().cpu().numpy().tolist()
    except Exception as exc:
        out[body] = None
print(json.dumps(out))
"""

XGB_HANDLER = """
import os
import xgboost as xgb


def model_fn(model_dir):
    booster = xgb.Booster()
    booster.load_model(os.path.join(model_dir, "model.json"))
    return booster
"""

XGB_TRAIN_AND_EXPECT = """
import json, os, sys
import numpy as np, xgboost as xgb
rows = (np.arange(60).reshape(20, 3) * 7 % 11).astype(float)
booster = xgb.train({"max_depth": 2}, xgb.DMatrix(rows, label=rows @ [1.0, -2.0, 0.5]), num_boost_round=3)
booster.save_model(os.path.join(sys.argv[1], "model.json"))
out = {}
for body in json.loads(sys.argv[2]):
    lines = [["nan" if v == "" else v for v in line.split(",")] for line in body.split("\\n")]
    try:
        matrix = xgb.DMatrix(np.array(lines).astype(None))
    except ValueError:
        out[body] = None
        continue
    out[body] = booster.predict(matrix, validate_features=False).tolist()
print(json.dumps(out))
"""

BODIES = ["1,2,3\n4,5,6", "0.5,2,3\n4,5.5,6", "1,2,3", "1,,3", "1,2,abc"]


def serve(tmp_path: Path, model: Path, environment: ModelEnvironment, framework: str) -> Server:
    server = start_server(
        tmp_path,
        ["--model", str(model), "--workers", "1"],
        env={
            "SMKIT_WORKER_PYTHON": environment.python,
            **environment.environ(),
            "SMKIT_FRAMEWORK": framework,
        },
        ready=False,
    )
    wait_ready(server, timeout=server.answer_bound(loading=True))
    return server


@pytest.mark.parametrize("framework", ["pytorch", "xgboost"])
def test_default_handlers_decode_and_predict_as_the_image(
    framework: str, framework_env: Callable[[str], ModelEnvironment], tmp_path: Path
) -> None:
    environment = framework_env(framework)
    model = tmp_path / "model"
    write_requirements(model, framework)  # the scaffold's bytes: the runtime finds the framework's layer
    handler, script = (
        (TORCH_HANDLER, TORCH_EXPECTED) if framework == "pytorch" else (XGB_HANDLER, XGB_TRAIN_AND_EXPECT)
    )
    (model / "code" / "inference.py").write_text(textwrap.dedent(handler))
    target = str(model / "code") if framework == "pytorch" else str(model)
    done = run_in(environment, ["-c", textwrap.dedent(script), target, json.dumps(BODIES)])
    assert done.returncode == 0, done.stderr
    expected = json.loads(done.stdout.strip().splitlines()[-1])
    server = serve(tmp_path, model, environment, framework)
    try:
        for body in BODIES:
            answer = server.invoke(body, "text/csv", "application/json")
            assert b"NaN" not in answer.body, body
            if expected[body] is None:
                assert answer.status in (400, 500), (body, answer.body)
            else:
                assert answer.status == 200, (body, answer.body)
                np.testing.assert_allclose(answer.json(), expected[body], rtol=1e-6, err_msg=body)
    finally:
        server.stop()
