"""SageMaker handler for a LightGBM model saved with ``booster.save_model("model.txt")``.

Replace ``MODEL_FILE`` if your file has another name; requests and responses: see ``rows.py``.
Hook contract: docs/handler-semantics.md.
"""

from __future__ import annotations

import os

import lightgbm as lgb
from rows import decode_rows, encode_predictions

MODEL_FILE = "model.txt"


def model_fn(model_dir):
    """Load the booster from ``model_dir/model.txt``."""
    return lgb.Booster(model_file=os.path.join(model_dir, MODEL_FILE))


def input_fn(input_data, content_type):
    """Rows of features as a 2-D array."""
    return decode_rows(input_data, content_type)


def predict_fn(data, model):
    """One prediction per row."""
    return model.predict(data)


def output_fn(prediction, accept):
    """``{"predictions": [...]}`` (or CSV)."""
    return encode_predictions(prediction, accept)
