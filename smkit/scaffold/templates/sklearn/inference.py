"""SageMaker handler for a scikit-learn estimator or Pipeline saved with ``joblib.dump(model, "model.joblib")``.

Set ``MODEL_FILE`` to your file's name, and ``PREDICT_METHOD`` to ``"predict_proba"`` for a classifier's
class probabilities. A model fitted on a pandas DataFrame (e.g. a Pipeline whose ColumnTransformer picks
columns by name, or a LightGBM, XGBoost or CatBoost model saved with joblib) gets each request as a
DataFrame with the columns it was fitted with (``rows.model_columns``): CSV rows in that order, JSON rows in that order or JSON records
(``[{"column": value, ...}]``); text values (categories) are kept as text. Requests and responses: see
``rows.py``. Hook contract: docs/handler-semantics.md.
"""

from __future__ import annotations

import os

import joblib
import numpy as np
from rows import RequestError, decode_table, encode_predictions, model_columns, predict_batch, to_frame

MODEL_FILE = "model.joblib"
PREDICT_METHOD = "predict"  # or "predict_proba", "decision_function", "transform"


def model_fn(model_dir):
    """Load the fitted estimator from ``model_dir/MODEL_FILE``."""
    model = joblib.load(os.path.join(model_dir, MODEL_FILE))
    if not callable(getattr(model, PREDICT_METHOD, None)):
        raise AttributeError(
            f"{type(model).__name__} has no {PREDICT_METHOD}(): set PREDICT_METHOD in inference.py to a "
            "method it has (predict, predict_proba, ...)"
        )
    return model


def input_fn(input_data, content_type):
    """Rows of values (numbers, or text for categorical columns) or JSON records."""
    return decode_table(input_data, content_type)


def _rows(data, model):
    """One request's rows as the model takes them: a DataFrame of its columns, or a 2-D float array."""
    columns = model_columns(model)
    if columns is not None:
        return to_frame(data, columns)
    try:
        rows = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise RequestError(
            f"the model takes numbers only (it was not fitted on named columns): {exc}"
        ) from exc
    return rows.reshape(1, -1) if rows.ndim == 1 else rows


def predict_fn(data, model):
    """``PREDICT_METHOD``'s answer per row (a list per row for ``predict_proba``)."""
    return getattr(model, PREDICT_METHOD)(_rows(data, model))


def predict_batch_fn(inputs, model):
    """Several requests' rows in one ``PREDICT_METHOD`` call, one answer per request (dynamic batching).

    Used only when batching is on (``SAGEMAKER_TS_BATCH_SIZE`` above 1, or ``batching:`` in the config);
    predict_fn serves each request otherwise. Batching pays when many small requests arrive at once: a tree
    ensemble or a linear model answers a hundred rows for little more than the cost of one.
    """
    return predict_batch(inputs, getattr(model, PREDICT_METHOD), lambda data: _rows(data, model))


def output_fn(prediction, accept):
    """``{"predictions": [...]}`` (or CSV)."""
    return encode_predictions(prediction, accept)
