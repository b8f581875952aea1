"""SageMaker handler for the iris classifier (scikit-learn ``LogisticRegression``).

Deliberately different from the tabular example (and with a ``features.py`` of the same name but
other content) so that several models served side by side prove they do not share modules.

Requests: rows of 4 iris measurements as ``text/csv``, ``application/json`` or ``application/x-npy``.
Responses by Accept: ``application/json`` ``{"predictions": [class names], "probabilities": [[p0, p1,
p2], ...]}`` (default), ``text/csv`` one class name per line, ``application/x-npy`` the (n, 3) float64
probabilities. Errors carry ``status_code`` (400 bad rows, 415 Content-Type, 406 Accept).
Hook contract: https://sagemaker.readthedocs.io/en/stable/frameworks/sklearn/using_sklearn.html
"""

from __future__ import annotations

import json
import os

import joblib
import numpy as np
from features import PARSER
from labels import names
from table_io import array_to_npy, negotiate

MODEL_FILE = "classifier.joblib"
DEFAULT_ACCEPT = "application/json"


def _json(result):
    labels, probabilities = result
    return json.dumps({"predictions": labels, "probabilities": probabilities.tolist()}).encode("utf-8")


def _csv(result):
    return "".join(f"{label}\n" for label in result[0]).encode("utf-8")


def _npy(result):
    return array_to_npy(result[1])


ENCODERS = {"application/json": _json, "text/csv": _csv, "application/x-npy": _npy}


def model_fn(model_dir, context=None):
    """Load the fitted classifier from ``model_dir/classifier.joblib`` (context is unused)."""
    return joblib.load(os.path.join(model_dir, MODEL_FILE))


def input_fn(input_data, content_type):
    """Decode the body into an (n, 4) float64 matrix."""
    return PARSER.decode(input_data, content_type)


def predict_fn(data, model):
    """Class names and class probabilities per row."""
    probabilities = np.asarray(model.predict_proba(data), dtype=np.float64)
    return names(probabilities.argmax(axis=1)), probabilities


def output_fn(prediction, accept):
    """Encode for the first supported type in Accept; return ``(body, content_type)``."""
    encoder, media = negotiate(accept, ENCODERS, DEFAULT_ACCEPT)
    return encoder(prediction), media
