"""SageMaker handler for an ONNX model (``artifacts/model.onnx``) run by ONNX Runtime on the CPU.

Export your model to ONNX (``torch.onnx.export``, skl2onnx, tf2onnx, ...) with one float input of shape
``[batch, features]``; set ``MODEL_FILE`` if your file has another name. Requests and responses: see
``rows.py``. Hook contract: docs/handler-semantics.md.
"""

from __future__ import annotations

import os

import numpy as np
import onnxruntime as ort
from rows import decode_rows, encode_predictions, predict_batch

MODEL_FILE = "model.onnx"


def intra_op_threads():
    """Threads of ONNX Runtime's pool, which reads no thread variable itself: the worker's
    ``OMP_NUM_THREADS``, which the serving runtime sets to 1 per worker unless you set it
    (docs/serving-runtime.md, "Threads and CPUs")."""
    first = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    return int(first) if first.isdigit() and int(first) > 0 else 1


def model_fn(model_dir):
    """An inference session on ``model_dir/MODEL_FILE`` (workers are processes; each sizes its own pool)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = intra_op_threads()
    return ort.InferenceSession(
        os.path.join(model_dir, MODEL_FILE), sess_options=options, providers=["CPUExecutionProvider"]
    )


def input_fn(input_data, content_type):
    """Rows of features as a 2-D float32 array."""
    return decode_rows(input_data, content_type).astype(np.float32)


def predict_fn(data, model):
    """The model's first output, one row per request row."""
    name = model.get_inputs()[0].name
    return model.run(None, {name: data})[0]


def predict_batch_fn(inputs, model):
    """Several requests' rows in one ONNX Runtime call, one answer per request (dynamic batching).

    Used only when batching is on (``SAGEMAKER_TS_BATCH_SIZE`` above 1, or ``batching:`` in the config);
    predict_fn serves each request otherwise. Batching pays when many small requests arrive at once: one
    session run on many rows costs little more than on one. The graph's first (batch) dimension
    must be dynamic, as in ``train.py``'s graph (``[None, FEATURES]``).
    """
    return predict_batch(inputs, lambda rows: predict_fn(rows, model))


def output_fn(prediction, accept):
    """``{"predictions": [...]}`` (or CSV)."""
    return encode_predictions(prediction, accept)
