"""SageMaker handler for the pipeline's first container: a fitted ``ColumnTransformer`` featurizer.

Like the preprocessing container of a SageMaker inference pipeline: raw rows in (the 10 diabetes features as ``text/csv``,
``application/json`` or ``application/x-npy``), features out for the next container. The response is
``text/csv`` by default (empty Accept, ``*/*`` or ``text/csv``): 11 columns per row, the 9 standardised
measurements then sex one-hot, every value written exactly (``repr``). ``application/json`` gives
``{"instances": [[...], ...]}`` and ``application/x-npy`` the float64 matrix. The Content-Type returned
carries no ``charset`` parameter, which strict next containers reject (docs/multi-container.md).
Hook contract: https://sagemaker.readthedocs.io/en/stable/frameworks/sklearn/using_sklearn.html
"""

from __future__ import annotations

import json
import os

import joblib
import numpy as np
from features import PARSER, RequestError
from table_io import array_to_npy, negotiate

MODEL_FILE = "featurizer.joblib"
DEFAULT_ACCEPT = "text/csv"


def _csv(matrix):
    return "".join(",".join(repr(v) for v in row) + "\n" for row in matrix.tolist()).encode("utf-8")


def _json(matrix):
    return json.dumps({"instances": matrix.tolist()}).encode("utf-8")


ENCODERS = {"text/csv": _csv, "application/json": _json, "application/x-npy": array_to_npy}


def model_fn(model_dir):
    """Load the fitted featurizer from ``model_dir/featurizer.joblib``."""
    return joblib.load(os.path.join(model_dir, MODEL_FILE))


def input_fn(input_data, content_type):
    """Decode raw rows into an (n, 10) float64 matrix."""
    return PARSER.decode(input_data, content_type)


def predict_fn(data, model):
    """Transform (not predict): standardise the measurements and one-hot encode sex."""
    try:
        return np.asarray(model.transform(data), dtype=np.float64)
    except ValueError as exc:  # e.g. a sex value other than 1 or 2
        raise RequestError(f"rows cannot be featurized: {exc}") from exc


def output_fn(prediction, accept):
    """Encode for the first supported type in Accept (CSV by default); return ``(body, content_type)``."""
    encoder, media = negotiate(accept, ENCODERS, DEFAULT_ACCEPT)
    return encoder(prediction), media
