"""SageMaker handler for a scikit-learn estimator saved with ``joblib.dump(model, "model.joblib")``.

Replace ``MODEL_FILE`` if your file has another name; requests and responses: see ``rows.py``.
Hook contract: docs/handler-semantics.md.
"""

from __future__ import annotations

import os

import joblib
from rows import decode_rows, encode_predictions

MODEL_FILE = "model.joblib"


def model_fn(model_dir):
    """Load the fitted estimator from ``model_dir/model.joblib``."""
    return joblib.load(os.path.join(model_dir, MODEL_FILE))


def input_fn(input_data, content_type):
    """Rows of features as a 2-D array."""
    return decode_rows(input_data, content_type)


def predict_fn(data, model):
    """One prediction per row."""
    return model.predict(data)


def output_fn(prediction, accept):
    """``{"predictions": [...]}`` (or CSV)."""
    return encode_predictions(prediction, accept)
