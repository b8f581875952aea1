"""SageMaker handler for a LightGBM model saved with ``booster.save_model("model.txt")``.

Replace ``MODEL_FILE`` if your file has another name; requests and responses: see ``rows.py``.
Hook contract: docs/handler-semantics.md.
"""

from __future__ import annotations

import os

import lightgbm as lgb
from rows import decode_rows, encode_predictions, predict_batch

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


def predict_batch_fn(inputs, model):
    """Several requests' rows in one booster call, one answer per request (dynamic batching).

    Used only when batching is on (``SAGEMAKER_TS_BATCH_SIZE`` above 1, or ``batching:`` in the config);
    predict_fn serves each request otherwise. Batching pays when many small requests arrive at once: LightGBM
    predicts many rows for little more than the cost of one.
    """
    return predict_batch(inputs, model.predict)


def output_fn(prediction, accept):
    """``{"predictions": [...]}`` (or CSV)."""
    return encode_predictions(prediction, accept)
