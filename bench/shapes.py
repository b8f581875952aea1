"""Real model shapes for ``bench.models``: what people deploy, each built tiny but real by its own library.

Every profile is a model directory (``code/inference.py`` and the model's files) served as is by every
server. Requests are ``application/octet-stream`` float64 rows of 10 features; answers are float64 rows of
10 values (class probabilities, or the scaled rows for the NumPy profile), so the response is as large as
the request: 1 KB (12 rows) or 2 MB (26,214 rows). The hooks are the same Python for every server.

- ``numpy``: five 300x300 float64 matrix products per request (BLAS: what a linear model, PCA or a
  hand-written MLP does), then the rows scaled by the product's trace.
- ``sklearn_rf``: ``RandomForestClassifier(n_estimators=100, max_depth=8, n_jobs=-1)``, ``predict_proba``.
- ``lightgbm``: a multiclass booster, 30 rounds x 10 classes, 31 leaves.
- ``xgboost``: ``multi:softprob``, 30 rounds x 10 classes, depth 6, predicted through a ``DMatrix``.
- ``torch_mlp``: ``Linear(10, 256) -> ReLU -> Linear(256, 256) -> ReLU -> Linear(256, 10) -> softmax``.
- ``onnx``: the same MLP as an ONNX graph in ONNX Runtime, its intra-op pool sized from
  ``OMP_NUM_THREADS`` as docs/serving-runtime.md advises (ONNX Runtime reads no variable itself).

The frameworks come from the benchmark venvs (pip, bench/envs.py), never from the kit's lock.
"""

from __future__ import annotations

import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path

from bench.common import BenchError

FEATURES = 10
ROW_BYTES = FEATURES * 8
SIZES = {"1KB": 12, "2MB": 2 * 1024 * 1024 // ROW_BYTES}  # rows per request
# What the profiles need, in both servers' venvs (numpy as in container/requirements.txt).
REQUIREMENTS = (
    "numpy==2.4.6",
    "scikit-learn==1.9.1",
    "lightgbm==4.7.0",
    "xgboost-cpu==3.2.0",
    "torch==2.13.0",
    "onnxruntime==1.31.1",
    "onnx==1.23.2",
)

COMMON = """
import os

import numpy as np

FEATURES = 10


def input_fn(data, content_type):
    return np.frombuffer(bytes(data), dtype=np.float64).reshape(-1, FEATURES)


def output_fn(prediction, accept):
    return np.ascontiguousarray(prediction, dtype=np.float64).tobytes(), "application/octet-stream"
"""

INFERENCE = {
    "numpy": """
def model_fn(model_dir):
    return np.load(os.path.join(model_dir, "matrix.npy"))


def predict_fn(rows, matrix):
    product = matrix
    for _ in range(5):
        product = product @ matrix
    return rows * (np.trace(product) / product.shape[0])
""",
    "sklearn_rf": """
import joblib


def model_fn(model_dir):
    return joblib.load(os.path.join(model_dir, "model.joblib"))


def predict_fn(rows, model):
    return model.predict_proba(rows)
""",
    "lightgbm": """
import lightgbm as lgb


def model_fn(model_dir):
    return lgb.Booster(model_file=os.path.join(model_dir, "model.txt"))


def predict_fn(rows, model):
    return model.predict(rows)
""",
    "xgboost": """
import xgboost as xgb


def model_fn(model_dir):
    model = xgb.Booster()
    model.load_model(os.path.join(model_dir, "model.json"))
    return model


def predict_fn(rows, model):
    return model.predict(xgb.DMatrix(rows))
""",
    "torch_mlp": """
import torch


def model_fn(model_dir):
    model = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 10), torch.nn.Softmax(dim=1),
    )
    model.load_state_dict(torch.load(os.path.join(model_dir, "model.pt"), weights_only=True))
    return model.eval()


def predict_fn(rows, model):
    with torch.inference_mode():
        return model(torch.from_numpy(rows).float()).numpy()
""",
    "onnx": """
import onnxruntime as ort


def model_fn(model_dir):
    options = ort.SessionOptions()
    options.intra_op_num_threads = int(os.environ.get("OMP_NUM_THREADS", "0"))  # 0: ORT's default
    options.inter_op_num_threads = 1
    return ort.InferenceSession(os.path.join(model_dir, "model.onnx"), options, providers=["CPUExecutionProvider"])


def predict_fn(rows, session):
    return session.run(None, {"rows": rows.astype(np.float32)})[0]
""",
}

# Run in the smkit venv with the model directory as argv[1]; every model is trained on the same data.
TRAIN_COMMON = """
import os, sys
import numpy as np
out = sys.argv[1]
rng = np.random.default_rng(0)
X = rng.normal(size=(5000, 10))
y = (np.abs(X @ rng.normal(size=10)) * 3).astype(int) % 10
"""
TRAIN = {
    "numpy": """
a = rng.normal(size=(300, 300))
np.save(os.path.join(out, "matrix.npy"), a / np.linalg.norm(a, 2))
""",
    "sklearn_rf": """
import joblib
from sklearn.ensemble import RandomForestClassifier
model = RandomForestClassifier(n_estimators=100, max_depth=8, n_jobs=-1, random_state=0).fit(X, y)
joblib.dump(model, os.path.join(out, "model.joblib"))
""",
    "lightgbm": """
import lightgbm as lgb
params = {"objective": "multiclass", "num_class": 10, "num_leaves": 31, "verbose": -1, "seed": 0}
lgb.train(params, lgb.Dataset(X, y), num_boost_round=30).save_model(os.path.join(out, "model.txt"))
""",
    "xgboost": """
import xgboost as xgb
params = {"objective": "multi:softprob", "num_class": 10, "max_depth": 6, "seed": 0}
xgb.train(params, xgb.DMatrix(X, label=y), num_boost_round=30).save_model(os.path.join(out, "model.json"))
""",
    "torch_mlp": """
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(10, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(),
    torch.nn.Linear(256, 10), torch.nn.Softmax(dim=1),
)
torch.save(model.state_dict(), os.path.join(out, "model.pt"))
""",
    "onnx": """
import onnx
from onnx import TensorProto, helper, numpy_helper
w = [rng.normal(scale=0.1, size=s).astype(np.float32) for s in [(10, 256), (256,), (256, 256), (256,), (256, 10), (10,)]]
names = ["w1", "b1", "w2", "b2", "w3", "b3"]
nodes = [
    helper.make_node("MatMul", ["rows", "w1"], ["m1"]), helper.make_node("Add", ["m1", "b1"], ["a1"]),
    helper.make_node("Relu", ["a1"], ["r1"]), helper.make_node("MatMul", ["r1", "w2"], ["m2"]),
    helper.make_node("Add", ["m2", "b2"], ["a2"]), helper.make_node("Relu", ["a2"], ["r2"]),
    helper.make_node("MatMul", ["r2", "w3"], ["m3"]), helper.make_node("Add", ["m3", "b3"], ["a3"]),
    helper.make_node("Softmax", ["a3"], ["probabilities"], axis=1),
]
graph = helper.make_graph(
    nodes, "mlp",
    [helper.make_tensor_value_info("rows", TensorProto.FLOAT, ["n", 10])],
    [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["n", 10])],
    [numpy_helper.from_array(a, n) for a, n in zip(w, names)],
)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "model.onnx"))
""",
}


@dataclass(frozen=True)
class Shape:
    """One profile at one payload size."""

    profile: str
    size: str

    @property
    def name(self) -> str:
        return f"{self.profile}/{self.size}"

    @property
    def rows(self) -> int:
        return SIZES[self.size]

    def body(self) -> bytes:
        """The request: ``rows`` float64 rows, the same bytes for every server and round."""
        import numpy as np  # noqa: PLC0415 - the harness imports NumPy only when building payloads

        return np.random.default_rng(1).normal(size=(self.rows, FEATURES)).astype(np.float64).tobytes()


def build_model(profile: str, python: Path, dest: Path) -> Path:
    """Train ``profile`` with ``python`` (the smkit venv) into ``dest``; return the model directory."""
    (dest / "code").mkdir(parents=True, exist_ok=True)
    (dest / "code" / "inference.py").write_text(
        textwrap.dedent(COMMON).lstrip() + textwrap.dedent(INFERENCE[profile])
    )
    script = textwrap.dedent(TRAIN_COMMON) + textwrap.dedent(TRAIN[profile])
    done = subprocess.run([str(python), "-c", script, str(dest)], capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"building the {profile} model failed: {done.stderr.strip()[-1500:]}")
    return dest


PROFILES = tuple(INFERENCE)
