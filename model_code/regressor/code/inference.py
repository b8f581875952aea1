"""SageMaker handler for the pipeline's second container: a ``Ridge`` regressor on featurized rows.

Requests: the featurizer's output, 11 features per row, as ``text/csv``, ``application/json`` (a list
of lists, or the featurizer's ``{"instances": [...]}``) or ``application/x-npy`` (loaded without pickle).
Responses by Accept: ``application/json`` ``{"predictions": [...]}`` (also for empty Accept and ``*/*``),
``text/csv`` one value per line, or ``application/x-npy`` a float64 vector. Bad input raises errors
carrying ``status_code`` 400; an unsupported Content-Type 415 and an unsupported Accept 406.
Hook contract: https://sagemaker.readthedocs.io/en/stable/frameworks/sklearn/using_sklearn.html
"""

from __future__ import annotations

import os

import joblib
import numpy as np
from features import PARSER
from table_io import VECTOR_ENCODERS, negotiate

MODEL_FILE = "model.joblib"
DEFAULT_ACCEPT = "application/json"


def model_fn(model_dir):
    """Load the fitted regressor from ``model_dir/model.joblib``."""
    return joblib.load(os.path.join(model_dir, MODEL_FILE))


def input_fn(input_data, content_type):
    """Decode the request body into an (n, 11) float64 matrix."""
    return PARSER.decode(input_data, content_type)


def predict_fn(data, model):
    """One prediction per row."""
    return np.asarray(model.predict(data), dtype=np.float64)


def output_fn(prediction, accept):
    """Encode for the first supported type in Accept; return ``(body, content_type)``."""
    encoder, media = negotiate(accept, VECTOR_ENCODERS, DEFAULT_ACCEPT)
    return encoder(prediction), media
