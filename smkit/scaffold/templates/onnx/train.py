"""Write a small example ONNX model (a linear regression built with the onnx package) and the samples.

Replace ``train`` with your own export to ``artifacts/model.onnx`` and remove ``onnx`` from
``code/requirements.txt`` (serving needs only onnxruntime), or put your model file into ``artifacts/`` and
run ``--samples-only --rows YOUR_ROWS.csv`` (``smkit train <name> --samples-only --rows YOUR_ROWS.csv``)
so that ``samples/expected.json`` holds what your model answers. Runs in the model's environment:
``smkit train <name>``.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MODEL_FILE = "model.onnx"
FEATURES = 8


def data(n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic synthetic regression data (no download)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, FEATURES)).astype(np.float32)
    y = x @ np.linspace(1.0, -1.0, FEATURES) + 0.1 * rng.normal(size=n)
    return x, y


def train(artifacts: Path) -> None:
    """Fit a least-squares line and save it as an ONNX graph: y = x @ w + b."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    x, y = data()
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
    sys.path.insert(0, str(HERE / "code"))
    import inference
    from rows import decode_rows

    rows = data()[0][:5].astype(float).round(4).tolist()
    if rows_file is not None:  # your own rows: comma-separated, no header
        rows = decode_rows(rows_file.read_bytes(), "text/csv").tolist()
    batch = np.asarray(rows, dtype=np.float32)
    predictions = inference.predict_fn(batch, inference.model_fn(str(artifacts)))
    samples.mkdir(parents=True, exist_ok=True)
    with open(samples / "request.csv", "w", newline="", encoding="utf-8") as out:
        csv.writer(out, lineterminator="\n").writerows(rows)
    (samples / "request.json").write_text(json.dumps(rows) + "\n")
    expected = {"predictions": np.asarray(predictions).tolist(), "rtol": 1e-5}
    (samples / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifacts", type=Path, default=HERE / "artifacts")
    parser.add_argument("--samples", type=Path, default=HERE / "samples")
    parser.add_argument("--samples-only", action="store_true", help="keep artifacts/, rewrite samples/")
    parser.add_argument("--rows", type=Path, help="CSV of your own feature rows for the samples (no header)")
    args = parser.parse_args()
    if not args.samples_only:
        train(args.artifacts)
    write_samples(args.artifacts, args.samples, args.rows)


if __name__ == "__main__":
    main()
