"""Train a small scikit-learn regressor and write the artifacts and the sample requests with their answers.

Replace ``train`` with your own training, or put your fitted ``model.joblib`` (a Pipeline, a classifier
with ``PREDICT_METHOD = "predict_proba"`` in ``code/inference.py``, ...) into ``artifacts/`` and run
``--samples-only --rows YOUR_ROWS.csv`` (``smkit train <name> --samples-only --rows YOUR_ROWS.csv``; rows in the
model's column order, text for categories) so that ``samples/expected.json`` holds what your model answers
for your rows. Runs in the model's environment:
``smkit train <name>``.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import joblib
import numpy as np

HERE = Path(__file__).resolve().parent
MODEL_FILE = "model.joblib"


def data(n: int = 400, features: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """Deterministic synthetic regression data (no download)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, features))
    y = x @ np.linspace(1.0, -1.0, features) + 0.1 * rng.normal(size=n)
    return x, y


def train(artifacts: Path) -> None:
    """Fit and save ``model.joblib``."""
    # Imported here: --samples-only runs with whatever library your own model.joblib needs.
    from sklearn.ensemble import GradientBoostingRegressor

    x, y = data()
    model = GradientBoostingRegressor(n_estimators=30, max_depth=3, random_state=0).fit(x, y)
    artifacts.mkdir(parents=True, exist_ok=True)
    joblib.dump(model, artifacts / MODEL_FILE)


def write_samples(artifacts: Path, samples: Path, rows_file: Path | None = None) -> None:
    """Sample requests (CSV and JSON) and ``expected.json``: the handler's answers (``code/inference.py``)."""
    sys.path.insert(0, str(HERE / "code"))
    import inference  # the handler itself: its MODEL_FILE, PREDICT_METHOD and column handling
    from rows import decode_table

    rows = data()[0][:5].tolist()
    if rows_file is not None:  # your own rows: comma-separated, no header, in the model's column order
        rows = decode_table(rows_file.read_bytes(), "text/csv")
    predictions = inference.predict_fn(rows, inference.model_fn(str(artifacts)))
    samples.mkdir(parents=True, exist_ok=True)
    with open(samples / "request.csv", "w", newline="", encoding="utf-8") as out:
        csv.writer(out, lineterminator="\n").writerows(rows)
    (samples / "request.json").write_text(json.dumps(rows) + "\n")
    expected = {"predictions": np.asarray(predictions).tolist(), "rtol": 1e-6}
    (samples / "expected.json").write_text(json.dumps(expected, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifacts", type=Path, default=HERE / "artifacts")
    parser.add_argument("--samples", type=Path, default=HERE / "samples")
    parser.add_argument("--samples-only", action="store_true", help="keep artifacts/, rewrite samples/")
    parser.add_argument("--rows", type=Path, help="CSV of your own feature rows for the samples (no header)")
    args = parser.parse_args()
    if not args.samples_only:
        train(args.artifacts)
    write_samples(args.artifacts, args.samples, args.rows)


if __name__ == "__main__":
    main()
