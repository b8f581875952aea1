"""Write a small example ONNX model (a linear regression built with the onnx package) and the samples.

Replace ``train`` with your own export to ``artifacts/model.onnx`` and remove ``onnx`` from
``code/requirements.txt`` (serving needs only onnxruntime), or put your model file into ``artifacts/`` and
run ``--samples-only --rows YOUR_ROWS.csv`` (``smkit train <name> --samples-only --rows YOUR_ROWS.csv``)
so that ``samples/expected.json`` holds what your model answers. Runs in the model's environment:
``smkit train <name>``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import samples_io

MODEL_FILE = "model.onnx"
FEATURES = 8


def train(artifacts: Path) -> None:
    """Fit a least-squares line and save it as an ONNX graph: y = x @ w + b."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    x, y = samples_io.regression_data(200, FEATURES)
    x = x.astype(np.float32)
    design = np.hstack([x, np.ones((len(x), 1), dtype=np.float32)])
    solution = np.linalg.lstsq(design, y, rcond=None)[0].astype(np.float32)
    weights = numpy_helper.from_array(solution[:-1].reshape(FEATURES, 1), "w")
    bias = numpy_helper.from_array(solution[-1:], "b")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["y"])],
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, FEATURES])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 1])],
        initializer=[weights, bias],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    artifacts.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(artifacts / MODEL_FILE))


def write_samples(artifacts: Path, samples: Path, rows_file: Path | None = None) -> None:
    """Sample requests (CSV and JSON) and ``expected.json``: the handler's answers (``code/inference.py``)."""
    rows = samples_io.feature_rows(rows_file).round(4)
    samples_io.write_requests(samples, rows)
    predictions = samples_io.handler_answers(artifacts, rows.astype(np.float32))
    samples_io.write_expected(samples, predictions, rtol=1e-5)


if __name__ == "__main__":
    samples_io.main(__doc__, train, write_samples)
