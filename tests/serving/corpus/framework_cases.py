"""Handlers of the frameworks users serve most, each with tiny weights trained in that framework's environment.

Like :mod:`cases` (scikit-learn and NumPy handlers), these handlers are written for these tests, in the
shapes framework handlers take: a PyTorch network imported from a helper module beside
``inference.py``, hooks that take the model server's context (the device from ``gpu_id``, the request's
headers), an XGBoost ``DMatrix`` with the toolkit's default ``output_fn``, a LightGBM
``transform_fn`` that answers ``(body, content_type)`` itself and raises a JSON message, a CatBoost model fed
a DataFrame with named columns, an ONNX graph run by onnxruntime with the toolkit's default ``output_fn``.
The framework runs from the environment ``smkit init --framework NAME``
scaffolds (:data:`smkit.scaffold.REQUIREMENTS`), for smkit and for the official stack alike, and the
weights are trained there by :attr:`FrameworkCase.train`, deterministically (one thread, fixed seeds).
``record_toolkit.py`` records the official sagemaker-inference 1.10.1 + Multi Model Server 1.1.11 answers
to :data:`cases.REQUESTS`; tests/frameworks/test_framework_handler_corpus.py compares smkit's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

from cases import HERE

from smkit.modelenv import ModelEnvironment, model_environment
from smkit.scaffold import REQUIREMENTS

# The rows every case trains on: 4 features, as the requests of cases.REQUESTS send.
ROWS = """
import numpy as np
rows = (np.arange(160).reshape(40, 4) * 7 % 11).astype(float)
target = rows @ np.array([1.0, -2.0, 0.5, 3.0])
labels = (target > np.median(target)).astype(int)
"""


@dataclass(frozen=True)
class FrameworkCase:
    """A handler folder under ``corpus/<name>/code/``, the framework whose environment serves it, and the
    script that trains its weights there (``sys.argv[1]`` is the model folder, ``code/`` on ``sys.path``)."""

    name: str
    framework: str
    train: str
    program: str = "inference.py"

    def build(self, environment: ModelEnvironment, model_dir: Path) -> None:
        """``model_dir/code`` (the handler files) and the weights beside it."""
        shutil.copytree(
            HERE / self.name / "code", model_dir / "code", ignore=shutil.ignore_patterns("__pycache__")
        )
        script = "import os, sys\nsys.path.insert(0, os.path.join(sys.argv[1], 'code'))\n" + ROWS
        trained = subprocess.run(
            [environment.python, "-c", script + textwrap.dedent(self.train), str(model_dir)],
            env={**os.environ, "PYTHONPATH": os.pathsep.join(environment.extra_paths)},
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        if trained.returncode != 0:
            raise RuntimeError(f"training {self.name} failed: {trained.stderr[-2000:]}")


def framework_environment(framework: str) -> ModelEnvironment:
    """The environment of a model scaffolded with ``smkit init --framework framework`` (built once, cached)."""
    with tempfile.TemporaryDirectory(prefix="smkit-corpus-env-") as tmp:
        (Path(tmp) / "code").mkdir()
        lines = "".join(f"{line}\n" for line in REQUIREMENTS[framework])
        (Path(tmp) / "code" / "requirements.txt").write_text(lines, encoding="utf-8")
        return model_environment(Path(tmp), progress=False)


FRAMEWORK_CASES = (
    FrameworkCase(
        "pytorch_helper_module",
        "pytorch",
        """
        import torch
        from net import Net
        torch.manual_seed(0)
        torch.save(Net().state_dict(), os.path.join(sys.argv[1], "model.pth"))
        """,
    ),
    FrameworkCase(
        "pytorch_context_device",
        "pytorch",
        """
        import torch
        torch.manual_seed(0)
        model = torch.jit.script(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh()))
        model.save(os.path.join(sys.argv[1], "model.pt"))
        """,
    ),
    FrameworkCase(
        "xgboost_dmatrix",
        "xgboost",
        """
        import xgboost as xgb
        params = {"max_depth": 2, "nthread": 1, "seed": 0}
        booster = xgb.train(params, xgb.DMatrix(rows, label=target), num_boost_round=5)
        booster.save_model(os.path.join(sys.argv[1], "xgboost-model.json"))
        """,
    ),
    FrameworkCase(
        "lightgbm_transform_fn",
        "lightgbm",
        """
        import lightgbm as lgb
        params = {"objective": "regression", "num_leaves": 8, "min_data_in_leaf": 1, "num_threads": 1,
                  "deterministic": True, "verbose": -1}
        booster = lgb.train(params, lgb.Dataset(rows, target), num_boost_round=5)
        booster.save_model(os.path.join(sys.argv[1], "model.txt"))
        """,
    ),
    FrameworkCase(
        "onnx_session",
        "onnx",
        """
        import onnx
        from onnx import TensorProto, helper, numpy_helper
        weights = numpy_helper.from_array(np.array([[1.0], [-2.0], [0.5], [3.0]], dtype=np.float32), "w")
        bias = numpy_helper.from_array(np.array([0.25], dtype=np.float32), "b")
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["rows", "w"], ["product"]), helper.make_node("Add", ["product", "b"], ["score"])],
            "linear",
            [helper.make_tensor_value_info("rows", TensorProto.FLOAT, [None, 4])],
            [helper.make_tensor_value_info("score", TensorProto.FLOAT, [None, 1])],
            [weights, bias],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        onnx.save(model, os.path.join(sys.argv[1], "model.onnx"))
        """,
    ),
    FrameworkCase(
        "catboost_dataframe",
        "catboost",
        """
        import pandas as pd
        from catboost import CatBoostClassifier
        from inference import FEATURES
        model = CatBoostClassifier(iterations=5, depth=2, random_seed=0, thread_count=1, verbose=False,
                                   allow_writing_files=False)
        model.fit(pd.DataFrame(rows, columns=FEATURES), labels)
        model.save_model(os.path.join(sys.argv[1], "model.cbm"))
        """,
    ),
)
