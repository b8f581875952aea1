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

import io
import json
import os

import joblib
import numpy as np
from features import RequestError, from_csv, from_json, from_npy
from labels import names

MODEL_FILE = "classifier.joblib"
DEFAULT_ACCEPT = "application/json"
DECODERS = {"text/csv": from_csv, "application/json": from_json, "application/x-npy": from_npy}


def _json(result):
    labels, probabilities = result
    return json.dumps({"predictions": labels, "probabilities": probabilities.tolist()}).encode("utf-8")


def _csv(result):
    return "".join(f"{label}\n" for label in result[0]).encode("utf-8")


def _npy(result):
    buffer = io.BytesIO()
    np.save(buffer, result[1], allow_pickle=False)
    return buffer.getvalue()


ENCODERS = {"application/json": _json, "text/csv": _csv, "application/x-npy": _npy}


def _media_type(value):
    return value.split(";", 1)[0].strip().lower()


def model_fn(model_dir, context=None):
    """Load the fitted classifier from ``model_dir/classifier.joblib`` (context is unused)."""
    return joblib.load(os.path.join(model_dir, MODEL_FILE))


def input_fn(input_data, content_type):
    """Decode the body into an (n, 4) float64 matrix."""
    decoder = DECODERS.get(_media_type(content_type or ""))
    if decoder is None:
        raise RequestError(
            f"Content-Type {content_type!r} is not supported; use one of {', '.join(DECODERS)}", 415
        )
    return decoder(input_data)


def predict_fn(data, model):
    """Class names and class probabilities per row."""
    probabilities = np.asarray(model.predict_proba(data), dtype=np.float64)
    return names(probabilities.argmax(axis=1)), probabilities


def output_fn(prediction, accept):
    """Encode for the first supported type in Accept; return ``(body, content_type)``."""
    for item in (accept or DEFAULT_ACCEPT).split(","):
        media = _media_type(item)
        media = DEFAULT_ACCEPT if media in ("", "*/*") else media
        if media in ENCODERS:
            return ENCODERS[media](prediction), media
    raise RequestError(f"Accept {accept!r} is not supported; use one of {', '.join(ENCODERS)}", 406)
