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

import io
import json
import os

import numpy as np
from features import FEATURE_NAMES, RequestError, from_csv, from_json, from_npy
from trees import Scorer, load_forest

MODEL_FILE = "model.npz"
DEFAULT_ACCEPT = "application/json"

DECODERS = {
    "text/csv": from_csv,
    "application/json": from_json,
    "application/x-npy": from_npy,
}


def _to_json(predictions: np.ndarray) -> bytes:
    return json.dumps({"predictions": predictions.tolist()}).encode("utf-8")


def _to_csv(predictions: np.ndarray) -> bytes:
    return "".join(f"{value!r}\n" for value in predictions.tolist()).encode("utf-8")


def _to_npy(predictions: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, predictions, allow_pickle=False)
    return buffer.getvalue()


ENCODERS = {
    "application/json": _to_json,
    "text/csv": _to_csv,
    "application/x-npy": _to_npy,
}


def _media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


def model_fn(model_dir):
    """Load the exported trees from ``model_dir/model.npz``; they must expect this handler's features."""
    return Scorer(load_forest(os.path.join(model_dir, MODEL_FILE), FEATURE_NAMES))


def input_fn(input_data, content_type):
    """Decode the request body into an (n, 10) float64 matrix."""
    decoder = DECODERS.get(_media_type(content_type or ""))
    if decoder is None:
        raise RequestError(
            f"Content-Type {content_type!r} is not supported; use one of {', '.join(DECODERS)}", 415
        )
    return decoder(input_data)


def predict_fn(data, model):
    """One float64 prediction per row (``input_fn`` has already refused NaN and infinity)."""
    return model.predict(data)


def output_fn(prediction, accept):
    """Encode for the first supported type in Accept; return ``(body, content_type)``."""
    encoder = ENCODERS.get(accept)  # the usual case: exactly one supported type
    if encoder is not None:
        return encoder(prediction), accept
    for item in (accept or DEFAULT_ACCEPT).split(","):
        media = _media_type(item)
        if media in ("", "*/*"):
            media = DEFAULT_ACCEPT
        encoder = ENCODERS.get(media)
        if encoder is not None:
            return encoder(prediction), media
    raise RequestError(f"Accept {accept!r} is not supported; use one of {', '.join(ENCODERS)}", 406)
