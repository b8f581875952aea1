"""Request and response formats shared by the tabular examples.

In: rows of named numeric features as ``text/csv``, ``application/json`` or ``application/x-npy``
(:class:`TableParser`). Out: the first type of the Accept header that the handler can write
(:func:`negotiate`), e.g. a vector of predictions with :data:`VECTOR_ENCODERS`.
``make package-model`` copies this file into the ``code/`` of every example archive
(``smkit package --include model_code/shared/table_io.py``), so each archive stays self-contained.
Every rejection raises :class:`RequestError` with the HTTP ``status_code`` the serving runtime returns
(400 bad rows, 415 Content-Type, 406 Accept).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import numpy as np


class RequestError(ValueError):
    """A request the model cannot answer; ``status_code`` is the HTTP status to return."""

    def __init__(self, message: str, status_code: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code


def media_type(value: str | None) -> str:
    """``"text/csv; charset=utf-8"`` -> ``"text/csv"``."""
    return (value or "").split(";", 1)[0].strip().lower()


def _text(data: str | bytes) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestError(f"body is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


class TableParser:
    """Turns a request body into a finite float64 matrix of shape (n, len(feature_names))."""

    def __init__(self, feature_names: tuple[str, ...]) -> None:
        self.feature_names = feature_names
        self.width = len(feature_names)
        # Content-Type (media type only) -> decoder, for an input_fn to look up.
        self.decoders = {
            "text/csv": self.from_csv,
            "application/json": self.from_json,
            "application/x-npy": self.from_npy,
        }

    def decode(self, data: str | bytes, content_type: str | None) -> np.ndarray:
        """The request body as a matrix, by its Content-Type (415 for any other type)."""
        decoder = self.decoders.get(media_type(content_type))
        if decoder is None:
            supported = ", ".join(self.decoders)
            raise RequestError(f"Content-Type {content_type!r} is not supported; use one of {supported}", 415)
        return decoder(data)

    def from_csv(self, data: str | bytes) -> np.ndarray:
        """Headerless CSV, one row per line.

        The common case (every line has exactly ``width`` numeric cells) is parsed as one flat list;
        anything else goes through the line-by-line parse that names the offending line.
        """
        text = _text(data)
        lines = [line for line in text.splitlines() if line and not line.isspace()]
        if lines and all(line.count(",") == self.width - 1 for line in lines):
            try:
                cells = list(map(float, ",".join(lines).split(",")))
            except ValueError:
                pass
            else:
                return self.to_matrix(np.array(cells, dtype=np.float64).reshape(len(lines), self.width))
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append(list(map(float, line.split(","))))
            except ValueError as exc:
                raise RequestError(f"CSV line {number}: {exc}; every cell must be a number") from exc
        return self.to_matrix(rows)

    def from_json(self, data: str | bytes) -> np.ndarray:
        """``[[...], ...]``, a single row ``[...]``, or ``{"instances": [[...], ...]}``."""
        try:
            parsed = json.loads(_text(data))
        except json.JSONDecodeError as exc:
            raise RequestError(f"body is not valid JSON ({exc})") from exc
        if isinstance(parsed, dict):
            if "instances" not in parsed:
                raise RequestError(f'JSON object needs an "instances" key, got keys {sorted(parsed)}')
            parsed = parsed["instances"]
        return self.to_matrix(parsed)

    def from_npy(self, data: str | bytes) -> np.ndarray:
        """An ``.npy`` array loaded without pickle support (object arrays are refused)."""
        raw = data.encode("latin-1") if isinstance(data, str) else data
        try:
            array = np.load(io.BytesIO(raw), allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise RequestError(f"body is not a numeric .npy array ({exc})") from exc
        return self.to_matrix(array)

    def to_matrix(self, rows: object) -> np.ndarray:
        """A finite float64 matrix of shape (n, width); one flat row is accepted as (1, n)."""
        try:
            matrix = np.asarray(rows, dtype=np.float64)
        except (ValueError, TypeError) as exc:
            raise RequestError(f"rows must be lists of numbers of equal length ({exc})") from exc
        if matrix.ndim == 1:
            matrix = matrix.reshape(1, -1)
        if matrix.ndim != 2 or matrix.shape[0] == 0:
            raise RequestError(f"expected a non-empty table of rows, got an array of shape {matrix.shape}")
        if matrix.shape[1] != self.width:
            raise RequestError(
                f"expected {self.width} features per row ({', '.join(self.feature_names)}), got {matrix.shape[1]}"
            )
        if not np.isfinite(matrix).all():
            raise RequestError("rows contain NaN or infinite values; send finite numbers only")
        return matrix


Encoder = Callable[[Any], bytes]


def negotiate(accept: str | None, encoders: dict[str, Encoder], default: str) -> tuple[Encoder, str]:
    """The encoder for the first type in ``accept`` that ``encoders`` has; empty or ``*/*`` means ``default``."""
    encoder = encoders.get(accept or "")  # the usual case: exactly one supported type
    if encoder is not None:
        return encoder, accept or ""
    for item in (accept or default).split(","):
        media = media_type(item)
        media = default if media in ("", "*/*") else media
        if media in encoders:
            return encoders[media], media
    raise RequestError(f"Accept {accept!r} is not supported; use one of {', '.join(encoders)}", 406)


def vector_to_json(predictions: np.ndarray) -> bytes:
    return json.dumps({"predictions": predictions.tolist()}).encode("utf-8")


def vector_to_csv(predictions: np.ndarray) -> bytes:
    """One value per line, written exactly (``repr``)."""
    return "".join(f"{value!r}\n" for value in predictions.tolist()).encode("utf-8")


def array_to_npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


# A float64 vector of predictions: {"predictions": [...]}, one value per CSV line, or the .npy vector.
VECTOR_ENCODERS: dict[str, Encoder] = {
    "application/json": vector_to_json,
    "text/csv": vector_to_csv,
    "application/x-npy": array_to_npy,
}
