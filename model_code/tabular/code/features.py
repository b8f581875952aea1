"""Request parsing for the diabetes regressor: rows of the 10 raw diabetes features.

Feature order (scikit-learn's ``load_diabetes(scaled=False)``): age, sex, bmi, bp, s1..s6.
Every rejection raises :class:`RequestError` with an HTTP ``status_code`` the serving runtime returns.
"""

from __future__ import annotations

import io
import json

import numpy as np

FEATURE_NAMES = ("age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6")
N_FEATURES = len(FEATURE_NAMES)


class RequestError(ValueError):
    """A request the model cannot answer; ``status_code`` is the HTTP status to return."""

    def __init__(self, message: str, status_code: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code


def _text(data: str | bytes) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RequestError(f"body is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def from_csv(data: str | bytes) -> np.ndarray:
    """Parse headerless CSV, one row per line.

    The common case (every line has exactly ``N_FEATURES`` numeric cells) is parsed as one flat list;
    anything else goes through the line-by-line parse that names the offending line.
    """
    text = _text(data)
    lines = [line for line in text.splitlines() if line and not line.isspace()]
    if lines and all(line.count(",") == N_FEATURES - 1 for line in lines):
        try:
            cells = list(map(float, ",".join(lines).split(",")))
        except ValueError:
            pass
        else:
            return to_matrix(np.array(cells, dtype=np.float64).reshape(len(lines), N_FEATURES))
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(list(map(float, line.split(","))))
        except ValueError as exc:
            raise RequestError(f"CSV line {number}: {exc}; every cell must be a number") from exc
    return to_matrix(rows)


def from_json(data: str | bytes) -> np.ndarray:
    """Parse ``[[...], ...]``, a single row ``[...]``, or ``{"instances": [[...], ...]}``."""
    try:
        parsed = json.loads(_text(data))
    except json.JSONDecodeError as exc:
        raise RequestError(f"body is not valid JSON ({exc})") from exc
    if isinstance(parsed, dict):
        if "instances" not in parsed:
            raise RequestError(f'JSON object needs an "instances" key, got keys {sorted(parsed)}')
        parsed = parsed["instances"]
    return to_matrix(parsed)


def from_npy(data: str | bytes) -> np.ndarray:
    """Load an ``.npy`` array without pickle support (object arrays are refused)."""
    raw = data.encode("latin-1") if isinstance(data, str) else data
    try:
        array = np.load(io.BytesIO(raw), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise RequestError(f"body is not a numeric .npy array ({exc})") from exc
    return to_matrix(array)


def to_matrix(rows: object) -> np.ndarray:
    """A finite float64 matrix of shape (n, 10); one flat row is accepted as (1, n)."""
    try:
        matrix = np.asarray(rows, dtype=np.float64)
    except (ValueError, TypeError) as exc:
        raise RequestError(f"rows must be lists of numbers of equal length ({exc})") from exc
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    if matrix.ndim != 2 or matrix.shape[0] == 0:
        raise RequestError(f"expected a non-empty table of rows, got an array of shape {matrix.shape}")
    if matrix.shape[1] != N_FEATURES:
        raise RequestError(
            f"expected {N_FEATURES} features per row ({', '.join(FEATURE_NAMES)}), got {matrix.shape[1]}"
        )
    if not np.isfinite(matrix).all():
        raise RequestError("rows contain NaN or infinite values; send finite numbers only")
    return matrix
