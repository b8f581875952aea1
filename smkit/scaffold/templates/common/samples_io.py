"""What every scaffolded ``train.py`` shares (written beside it): its command line, the example data and
the sample files.

``train.py`` runs as a script, so its own folder is on ``sys.path`` and ``import samples_io`` finds this
file; it runs in the model's environment (``smkit train NAME``), where smkit itself need not be
installed, which is why this file is part of the model folder. It is not part of the model archive:
``smkit package`` packs ``code/`` and ``artifacts/`` only.

The samples are what ``smkit smoke-test`` sends and checks: ``samples/request.csv`` (one row per line),
``samples/request.json`` (a list of rows) and ``samples/expected.json``
(``{"predictions": [...], "rtol": ...}``: the model's answers and the relative tolerance they are compared
with).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent


def regression_data(n: int = 400, features: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic synthetic regression data (no download)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, features))
    y = x @ np.linspace(1.0, -1.0, features) + 0.1 * rng.normal(size=n)
    return x, y


def feature_rows(rows_file: Path | None, dtype: Any = np.float64) -> np.ndarray:
    """The rows of the sample requests: your own (``rows_file``: numbers only, comma-separated, no header)
    or else the first five rows of :func:`regression_data`."""
    rows = regression_data()[0][:5] if rows_file is None else np.loadtxt(rows_file, delimiter=",", ndmin=2)
    return rows.astype(dtype)


def handler_module(name: str = "inference") -> Any:
    """A module of ``code/`` (the handler ``inference``, or ``rows``), imported as the server imports it."""
    code = str(HERE / "code")
    if code not in sys.path:
        sys.path.insert(0, code)
    return __import__(name)


def table_rows(rows_file: Path) -> list[Any]:
    """Your own rows as the handler reads a CSV request: comma-separated, no header, in the model's column
    order, text kept for categories (``code/rows.py``)."""
    return handler_module("rows").decode_table(rows_file.read_bytes(), "text/csv")


def handler_answers(artifacts: Path, rows: Any) -> Any:
    """What the handler itself (``code/inference.py``: its ``model_fn`` and ``predict_fn``) answers."""
    inference = handler_module()
    return inference.predict_fn(rows, inference.model_fn(str(artifacts)))


def write_requests(samples: Path, rows: Any) -> None:
    """``request.csv`` and ``request.json``: the same rows (an array, or lists of numbers and text)."""
    rows = rows.tolist() if isinstance(rows, np.ndarray) else rows
    samples.mkdir(parents=True, exist_ok=True)
    with open(samples / "request.csv", "w", newline="", encoding="utf-8") as out:
        csv.writer(out, lineterminator="\n").writerows(rows)
    (samples / "request.json").write_text(json.dumps(rows) + "\n")


def write_expected(samples: Path, predictions: Any, rtol: float) -> None:
    """``expected.json``: the model's answers to the requests, compared within ``rtol``."""
    samples.mkdir(parents=True, exist_ok=True)
    expected = {"predictions": np.asarray(predictions).tolist(), "rtol": rtol}
    (samples / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")


def main(
    doc: str,
    train: Callable[[Path], None],
    write_samples: Callable[..., None],
    *,
    own_rows: bool = True,
) -> None:
    """``train.py``'s command line: ``train(artifacts)`` unless ``--samples-only``, then
    ``write_samples(artifacts, samples[, rows_file])`` (``--rows``, where ``own_rows``)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--artifacts", type=Path, default=HERE / "artifacts")
    parser.add_argument("--samples", type=Path, default=HERE / "samples")
    parser.add_argument("--samples-only", action="store_true", help="keep artifacts/, rewrite samples/")
    if own_rows:
        parser.add_argument(
            "--rows", type=Path, help="CSV of your own feature rows for the samples (no header)"
        )
    args = parser.parse_args()
    if not args.samples_only:
        train(args.artifacts)
    write_samples(args.artifacts, args.samples, *([args.rows] if own_rows else []))
