"""Request decoding and response encoding shared by the scaffolded handlers (copied into code/).

Requests: rows of numbers as ``text/csv`` (one row per line), ``application/json`` (a list of rows, or
``{"instances": [...]}``) or ``application/x-npy``. Responses: ``application/json``
``{"predictions": [...]}`` (default) or ``text/csv`` (one prediction per line).

Tables (``decode_table``, ``to_frame``) also take text values (categories) and JSON records
(``[{"column": value, ...}, ...]``), for a model fitted on a pandas DataFrame with named columns.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

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


def _cell(value: str) -> float | str:
    try:
        return float(value)
    except ValueError:
        return value


def decode_table(body: str | bytes, content_type: str | None) -> list[Any]:
    """The request as a list of rows (lists of numbers and text) or of ``{column: value}`` records."""
    media = (content_type or "").split(";")[0].strip().lower()
    if media not in ("text/csv", "application/json"):
        return decode_rows(body, content_type).tolist()
    text = body.decode("utf-8") if isinstance(body, bytes) else str(body)
    if media == "text/csv":
        return [[_cell(v) for v in row] for row in csv.reader(io.StringIO(text)) if row]
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RequestError(f"cannot read the JSON rows: {exc}") from exc
    data = data["instances"] if isinstance(data, dict) and "instances" in data else data
    rows = data if isinstance(data, list) else [data]
    return [rows] if rows and not isinstance(rows[0], (list, dict)) else rows


# Where each library keeps the names of the columns a model was fitted on (a DataFrame's columns):
# scikit-learn and the scikit-learn APIs of XGBoost and LightGBM, LightGBM, CatBoost, an XGBoost Booster.
COLUMN_ATTRIBUTES = ("feature_names_in_", "feature_name_", "feature_names_", "feature_names")


def model_columns(model: Any) -> list[str] | None:
    """The column names ``model`` was fitted on, or None when it was fitted on an array.

    Names a library makes up for an unnamed array (LightGBM ``Column_0``, CatBoost ``0``) count as none.
    """
    for attribute in COLUMN_ATTRIBUTES:
        try:
            names = getattr(model, attribute, None)
        except Exception:  # e.g. LightGBM raises on an unfitted model
            continue
        if names is None or callable(names) or len(names) == 0:
            continue
        names = [str(name) for name in names]
        made_up = {str(i) for i in range(len(names))} | {f"Column_{i}" for i in range(len(names))}
        if not set(names) <= made_up:
            return names
    return None


def to_frame(rows: list[Any], columns: list[str]) -> Any:
    """``rows`` as a pandas DataFrame with the model's ``columns`` (records may list them in any order)."""
    import pandas as pd  # only models fitted on a DataFrame need it (and were trained with it)

    if rows and isinstance(rows[0], dict):
        missing = sorted({c for c in columns if any(c not in r for r in rows)})
        if missing:
            raise RequestError(f"records lack the column(s) {missing}; the model was fitted on {columns}")
        return pd.DataFrame.from_records(rows, columns=columns)
    widths = {len(r) for r in rows}
    if widths - {len(columns)}:
        raise RequestError(
            f"rows have {sorted(widths)} values; the model was fitted on {len(columns)} columns {columns} "
            "(send them in this order, or JSON records naming them)"
        )
    return pd.DataFrame(rows, columns=columns)


def predict_batch(inputs: list[Any], predict: Any, prepare: Any = None) -> list[Any]:
    """The body of a ``predict_batch_fn``: every request's rows in one ``predict`` call, the answer split
    back into one prediction per request, in order (dynamic batching: docs/handler-semantics.md).

    ``prepare`` turns one request's input into what ``predict`` takes (rows as an array or a DataFrame).
    A request whose rows cannot join the others (a bad value, another column count) is predicted alone,
    and its error is returned in its place: ``encode_predictions`` raises it, so it fails that request
    only, never its batch-mates.
    """
    ready: list[Any] = []
    for data in inputs:
        try:
            ready.append(prepare(data) if prepare is not None else data)
        except Exception as exc:  # noqa: BLE001 - this request's own error
            ready.append(exc)
    rows = [r for r in ready if not isinstance(r, Exception)]
    if not rows:
        return ready
    try:
        stacked = _stack(rows)
    except (ValueError, TypeError):  # different column counts or kinds: one call each
        return [r if isinstance(r, Exception) else _alone(predict, r) for r in ready]
    answers = iter(_split(predict(stacked), [len(r) for r in rows]))
    return [r if isinstance(r, Exception) else next(answers) for r in ready]


def _stack(rows: list[Any]) -> Any:
    if hasattr(rows[0], "columns"):  # pandas DataFrames
        import pandas as pd

        if any(list(r.columns) != list(rows[0].columns) for r in rows):
            raise ValueError("the requests' columns differ")
        return pd.concat(rows, ignore_index=True)
    return np.concatenate([np.asarray(r) for r in rows])


def _split(answer: Any, counts: list[int]) -> list[Any]:
    answer = np.asarray(answer)
    if len(answer) != sum(counts):
        raise ValueError(f"the model answered {len(answer)} rows for {sum(counts)} rows of input")
    return np.split(answer, np.cumsum(counts)[:-1])


def _alone(predict: Any, rows: Any) -> Any:
    try:
        return predict(rows)
    except Exception as exc:  # noqa: BLE001 - this request's own error
        return exc


def encode_predictions(predictions: np.ndarray, accept: str | None) -> tuple[bytes, str]:
    """``(body, content_type)`` for the first supported type in ``accept`` (default JSON); a prediction that
    is an error (``predict_batch``) is raised."""
    if isinstance(predictions, Exception):
        raise predictions
    values = np.asarray(predictions).tolist()
    for media in [a.split(";")[0].strip().lower() for a in (accept or "").split(",")]:
        if media == "text/csv":
            return "".join(f"{json.dumps(v)}\n" for v in values).encode("utf-8"), "text/csv"
        if media in ("application/json", "*/*", ""):
            break
    return json.dumps({"predictions": values}).encode("utf-8"), "application/json"
