"""SageMaker handler for the pipeline's first container: a fitted ``ColumnTransformer`` featurizer.

Like seed 001's preprocessing container: raw rows in (the 10 diabetes features as ``text/csv``,
``application/json`` or ``application/x-npy``), features out for the next container. The response is
``text/csv`` by default (empty Accept, ``*/*`` or ``text/csv``): 11 columns per row, the 9 standardised
measurements then sex one-hot, every value written exactly (``repr``). ``application/json`` gives
``{"instances": [[...], ...]}`` and ``application/x-npy`` the float64 matrix. The Content-Type returned
carries no ``charset`` parameter, which strict next containers reject (REFERENCE.md §4).
Hook contract: https://sagemaker.readthedocs.io/en/stable/frameworks/sklearn/using_sklearn.html
"""

from __future__ import annotations

import io
import json
import os

import joblib
import numpy as np
from features import RequestError, from_csv, from_json, from_npy

MODEL_FILE = "featurizer.joblib"
DEFAULT_ACCEPT = "text/csv"
DECODERS = {"text/csv": from_csv, "application/json": from_json, "application/x-npy": from_npy}


def _csv(matrix):
    return "".join(",".join(repr(v) for v in row) + "\n" for row in matrix.tolist()).encode("utf-8")


def _json(matrix):
    return json.dumps({"instances": matrix.tolist()}).encode("utf-8")


def _npy(matrix):
    buffer = io.BytesIO()
    np.save(buffer, matrix, allow_pickle=False)
    return buffer.getvalue()


ENCODERS = {"text/csv": _csv, "application/json": _json, "application/x-npy": _npy}


def _media_type(value):
    return value.split(";", 1)[0].strip().lower()


def model_fn(model_dir):
    """Load the fitted featurizer from ``model_dir/featurizer.joblib``."""
    return joblib.load(os.path.join(model_dir, MODEL_FILE))


def input_fn(input_data, content_type):
    """Decode raw rows into an (n, 10) float64 matrix."""
    decoder = DECODERS.get(_media_type(content_type or ""))
    if decoder is None:
        raise RequestError(
            f"Content-Type {content_type!r} is not supported; use one of {', '.join(DECODERS)}", 415
        )
    return decoder(input_data)


def predict_fn(data, model):
    """Transform (not predict): standardise the measurements and one-hot encode sex."""
    try:
        return np.asarray(model.transform(data), dtype=np.float64)
    except ValueError as exc:  # e.g. a sex value other than 1 or 2
        raise RequestError(f"rows cannot be featurized: {exc}") from exc


def output_fn(prediction, accept):
    """Encode for the first supported type in Accept (CSV by default); return ``(body, content_type)``."""
    for item in (accept or DEFAULT_ACCEPT).split(","):
        media = _media_type(item)
        media = DEFAULT_ACCEPT if media in ("", "*/*") else media
        if media in ENCODERS:
            return ENCODERS[media](prediction), media
    raise RequestError(f"Accept {accept!r} is not supported; use one of {', '.join(ENCODERS)}", 406)
