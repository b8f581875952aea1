"""A PyTorch handler whose hooks take the model server's context: the device from ``gpu_id``, as the
PyTorch toolkit's own handler picks it, and the request's headers read back from the context."""

import io
import json
import os

import numpy as np
import torch


def model_fn(model_dir, context):
    gpu_id = context.system_properties.get("gpu_id")
    device = torch.device(f"cuda:{gpu_id}" if torch.cuda.is_available() and gpu_id is not None else "cpu")
    model = torch.jit.load(os.path.join(model_dir, "model.pt"), map_location=device)
    model.eval()
    return model


def input_fn(request_body, request_content_type, context):
    if request_content_type == "application/json":
        return torch.tensor(json.loads(request_body), dtype=torch.float32)
    if request_content_type == "text/csv":
        rows = np.loadtxt(io.StringIO(request_body), delimiter=",", ndmin=2)
        return torch.tensor(rows, dtype=torch.float32)
    raise ValueError(f"Unsupported content type: {request_content_type}")


def predict_fn(data, model, context):
    with torch.no_grad():
        return model(data)


def output_fn(prediction, accept, context):
    properties = context.system_properties
    headers = context.request_processor[0].get_request_properties()
    return json.dumps(
        {
            "predictions": prediction.numpy().tolist(),
            "gpu_id": properties.get("gpu_id"),
            "batch_size": properties.get("batch_size"),
            "content_type": context.get_request_header(0, "Content-Type"),
            "accept": headers.get("Accept") or headers.get("accept"),
        }
    )
