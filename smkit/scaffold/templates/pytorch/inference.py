"""SageMaker handler for a TorchScript model saved with ``torch.jit.save(torch.jit.script(model), "model.pt")``.

On AWS's PyTorch image these hooks are what its defaults do already (load ``model.pt``, call the model
on a float tensor); they are spelled out so that the kit's own image serves the model the same way.
Requests and responses: see ``rows.py``. Hook contract: docs/handler-semantics.md.
"""

from __future__ import annotations

import os

import torch
from rows import decode_rows, encode_predictions, predict_batch

MODEL_FILE = "model.pt"


def model_fn(model_dir):
    """Load the TorchScript module on the CPU (or the GPU when there is one)."""
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torch.jit.load(os.path.join(model_dir, MODEL_FILE), map_location=device)
    return model.eval()


def input_fn(input_data, content_type):
    """Rows of features as a float32 tensor."""
    return torch.from_numpy(decode_rows(input_data, content_type).astype("float32"))


def predict_fn(data, model):
    """The model's output for the rows, without gradients."""
    device = next(model.parameters()).device if list(model.parameters()) else torch.device("cpu")
    with torch.no_grad():
        return model(data.to(device)).cpu().numpy()


def predict_batch_fn(inputs, model):
    """Several requests' rows in one forward pass, one answer per request (dynamic batching).

    Used only when batching is on (``SAGEMAKER_TS_BATCH_SIZE`` above 1, or ``batching:`` in the config);
    predict_fn serves each request otherwise. Batching pays when many small requests arrive at once: one
    forward pass over many rows costs little more than over one.
    """
    return predict_batch(inputs, lambda rows: predict_fn(torch.from_numpy(rows), model), lambda x: x.numpy())


def output_fn(prediction, accept):
    """``{"predictions": [...]}`` (or CSV)."""
    return encode_predictions(prediction, accept)
