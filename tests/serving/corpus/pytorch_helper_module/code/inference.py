"""A PyTorch state dict served with the network class from a helper module, JSON or NPY in, JSON out."""

import io
import json
import os

import numpy as np
import torch

from net import Net


def model_fn(model_dir):
    model = Net()
    with open(os.path.join(model_dir, "model.pth"), "rb") as f:
        model.load_state_dict(torch.load(f, weights_only=True))
    model.eval()
    return model


def input_fn(request_body, request_content_type):
    if request_content_type == "application/json":
        return torch.tensor(json.loads(request_body), dtype=torch.float32)
    if request_content_type == "application/x-npy":
        return torch.from_numpy(np.load(io.BytesIO(request_body))).float()
    raise ValueError(f"Unsupported content type: {request_content_type}")


def predict_fn(input_object, model):
    with torch.no_grad():
        return model(input_object)


def output_fn(prediction, content_type):
    return json.dumps(prediction.numpy().tolist())
