"""SageMaker handler for a CatBoost model saved with ``model.save_model("model.cbm")``.

Set ``MODEL_FILE`` to your file's name, ``MODEL_CLASS`` to the class you trained (``CatBoostClassifier``,
``CatBoostRegressor``) and ``PREDICT_METHOD`` to ``"predict"`` for labels or values. A model fitted on a
pandas DataFrame gets each request as a DataFrame with the columns it was fitted with (``feature_names_``):
CSV rows in that order, JSON rows in that order or JSON records; text values stay text, as its
categorical columns need. Requests and responses: see ``rows.py``. Hook contract: docs/handler-semantics.md.
"""

from __future__ import annotations

import os

import catboost
import numpy as np
from rows import RequestError, decode_table, encode_predictions, model_columns, to_frame

MODEL_FILE = "model.cbm"
MODEL_CLASS = "CatBoostClassifier"  # or "CatBoostRegressor"
PREDICT_METHOD = "predict_proba"  # or "predict"


def model_fn(model_dir):
    """Load the model from ``model_dir/MODEL_FILE``."""
    model = getattr(catboost, MODEL_CLASS)()
    model.load_model(os.path.join(model_dir, MODEL_FILE))
    return model


def input_fn(input_data, content_type):
    """Rows of values (numbers, or text for categorical columns) or JSON records."""
    return decode_table(input_data, content_type)


def predict_fn(data, model):
    """``PREDICT_METHOD``'s answer per row (a list per row for ``predict_proba``)."""
    columns = model_columns(model)
    if columns is not None:
        return getattr(model, PREDICT_METHOD)(to_frame(data, columns))
    try:
        rows = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise RequestError(
            f"the model takes numbers only (it was not fitted on named columns): {exc}"
        ) from exc
    return getattr(model, PREDICT_METHOD)(rows.reshape(1, -1) if rows.ndim == 1 else rows)


def output_fn(prediction, accept):
    """``{"predictions": [...]}`` (or CSV)."""
    return encode_predictions(prediction, accept)
