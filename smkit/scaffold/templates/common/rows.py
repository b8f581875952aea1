"""Request decoding and response encoding shared by the scaffolded handlers (copied into code/).

Requests: rows of numbers as ``text/csv`` (one row per line), ``application/json`` (a list of rows, or
``{"instances": [...]}``) or ``application/x-npy``. Responses: ``application/json``
``{"predictions": [...]}`` (default) or ``text/csv`` (one prediction per line).
"""

from __future__ import annotations

import io
import json

import numpy as np


class RequestError(ValueError):
    """A request the model cannot use; the serving runtime answers with ``status_code``."""

    def __init__(self, message: str, status_code: int = 400) -> None:
        super().__init__(message)
        self.status_code = status_code


def decode_rows(body: str | bytes, content_type: str | None) -> np.ndarray:
    """The request as a 2-D float64 array (one row per instance)."""
    media = (content_type or "").split(";")[0].strip().lower()
    text = body.decode("utf-8") if isinstance(body, bytes) and media != "application/x-npy" else body
    try:
        if media == "text/csv":
            rows = np.loadtxt(io.StringIO(str(text)), delimiter=",", dtype=np.float64, ndmin=2)
        elif media == "application/json":
            data = json.loads(text)
            rows = np.asarray(data["instances"] if isinstance(data, dict) else data, dtype=np.float64)
        elif media == "application/x-npy":
            raw = body if isinstance(body, bytes) else str(body).encode()
            rows = np.load(io.BytesIO(raw), allow_pickle=False).astype(np.float64)
        else:
            raise RequestError(
                f"Content-Type {content_type!r} is not supported; send text/csv or application/json", 415
            )
    except (ValueError, KeyError, TypeError) as exc:
        if isinstance(exc, RequestError):
            raise
        raise RequestError(f"cannot read the rows: {exc}") from exc
    return rows.reshape(1, -1) if rows.ndim == 1 else rows


def encode_predictions(predictions: np.ndarray, accept: str | None) -> tuple[bytes, str]:
    """``(body, content_type)`` for the first supported type in ``accept`` (default JSON)."""
    values = np.asarray(predictions).tolist()
    for media in [a.split(";")[0].strip().lower() for a in (accept or "").split(",")]:
        if media == "text/csv":
            return "".join(f"{json.dumps(v)}\n" for v in values).encode("utf-8"), "text/csv"
        if media in ("application/json", "*/*", ""):
            break
    return json.dumps({"predictions": values}).encode("utf-8"), "application/json"
