"""SageMaker handler for the diabetes regressor: gradient-boosted trees scored with NumPy alone.

The model is ``model.npz``, the trees of a scikit-learn ``GradientBoostingRegressor`` exported by
``train.py`` (format and scorer in ``trees.py``); it loads without pickle and without scikit-learn.

Requests: rows of the 10 raw diabetes features as ``text/csv``, ``application/json`` (list of lists)
or ``application/x-npy`` (loaded without pickle). Responses by Accept: ``application/json``
``{"predictions": [...]}`` (also for empty Accept and ``*/*``), ``text/csv`` one value per line, or
``application/x-npy`` a float64 vector. Bad input raises errors carrying ``status_code`` 400; an
unsupported Content-Type 415 and an unsupported Accept 406.
Hook contract: https://sagemaker.readthedocs.io/en/stable/frameworks/sklearn/using_sklearn.html
"""

from __future__ import annotations

import os

from features import FEATURE_NAMES, PARSER
from table_io import VECTOR_ENCODERS, negotiate
from trees import Scorer, load_forest

MODEL_FILE = "model.npz"
DEFAULT_ACCEPT = "application/json"


def model_fn(model_dir):
    """Load the exported trees from ``model_dir/model.npz``; they must expect this handler's features."""
    return Scorer(load_forest(os.path.join(model_dir, MODEL_FILE), FEATURE_NAMES))


def input_fn(input_data, content_type):
    """Decode the request body into an (n, 10) float64 matrix."""
    return PARSER.decode(input_data, content_type)


def predict_fn(data, model):
    """One float64 prediction per row (``input_fn`` has already refused NaN and infinity)."""
    return model.predict(data)


def output_fn(prediction, accept):
    """Encode for the first supported type in Accept; return ``(body, content_type)``."""
    encoder, media = negotiate(accept, VECTOR_ENCODERS, DEFAULT_ACCEPT)
    return encoder(prediction), media
