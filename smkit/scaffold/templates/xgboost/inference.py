"""SageMaker handler for an XGBoost model saved with ``booster.save_model("model.json")``.

Replace ``MODEL_FILE`` if your file has another name (``.ubj`` works too); requests and responses: see
``rows.py``. Hook contract: docs/handler-semantics.md.
"""

from __future__ import annotations

import os

import xgboost as xgb
from rows import decode_rows, encode_predictions, predict_batch

MODEL_FILE = "model.json"


def model_fn(model_dir):
    """Load the booster from ``model_dir/model.json``."""
    booster = xgb.Booster()
    booster.load_model(os.path.join(model_dir, MODEL_FILE))
    return booster


def input_fn(input_data, content_type):
    """Rows of features as a 2-D array."""
    return decode_rows(input_data, content_type)


def predict_fn(data, model):
    """One prediction per row."""
    return model.predict(xgb.DMatrix(data))


def predict_batch_fn(inputs, model):
    """Several requests' rows in one booster call, one answer per request (dynamic batching).

    Used only when batching is on (``SAGEMAKER_TS_BATCH_SIZE`` above 1, or ``batching:`` in the config);
    predict_fn serves each request otherwise. Batching pays when many small requests arrive at once: building the
    DMatrix and walking the trees once for many rows costs little more than for one.
    """
    return predict_batch(inputs, lambda rows: model.predict(xgb.DMatrix(rows)))


def output_fn(prediction, accept):
    """``{"predictions": [...]}`` (or CSV)."""
    return encode_predictions(prediction, accept)
