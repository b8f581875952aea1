"""An ONNX graph run by onnxruntime: the session's own input name, float32 rows, one output per row."""

import io
import json
import os

import numpy as np
import onnxruntime as ort


def model_fn(model_dir):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(
        os.path.join(model_dir, "model.onnx"), options, providers=["CPUExecutionProvider"]
    )


def input_fn(request_body, request_content_type):
    if request_content_type == "text/csv":
        return np.loadtxt(io.StringIO(request_body), delimiter=",", ndmin=2).astype(np.float32)
    if request_content_type == "application/json":
        return np.asarray(json.loads(request_body), dtype=np.float32)
    if request_content_type == "application/x-npy":
        return np.load(io.BytesIO(request_body)).astype(np.float32)
    raise ValueError(f"unsupported content type {request_content_type}")


def predict_fn(input_data, session):
    [output] = session.run(None, {session.get_inputs()[0].name: input_data})
    return output
