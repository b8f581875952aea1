"""Train a small CatBoost classifier on a DataFrame with a categorical column; write artifacts and samples.

Replace ``train`` with your own training, or put your ``model.cbm`` into ``artifacts/`` and run
``--samples-only --rows YOUR_ROWS.csv`` (``smkit train <name> --samples-only --rows YOUR_ROWS.csv``; rows
in the model's column order, text for categories) so that ``samples/expected.json`` holds what your
model answers for your rows. Runs in the model's environment: ``smkit train <name>``.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
MODEL_FILE = "model.cbm"
PLANS = ("basic", "plus", "pro")


def data(n: int = 300) -> tuple[Any, np.ndarray]:
    """Deterministic synthetic churn data (no download): tenure, monthly charge and a plan category."""
    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "tenure": rng.integers(1, 72, size=n),
            "monthly": rng.normal(60.0, 20.0, size=n).round(2),
            "plan": rng.choice(PLANS, size=n),
        }
    )
    risk = (frame["monthly"] - 2.0 * frame["tenure"] + 40.0 * (frame["plan"] == "basic")).to_numpy()
    return frame, (risk > np.median(risk)).astype(int)


def train(artifacts: Path) -> None:
    """Fit and save ``model.cbm`` (the plan column is categorical)."""
    from catboost import CatBoostClassifier

    frame, labels = data()
    model = CatBoostClassifier(iterations=60, depth=4, random_seed=0, verbose=False, thread_count=1)
    model.fit(frame, labels, cat_features=["plan"])
    artifacts.mkdir(parents=True, exist_ok=True)
    model.save_model(str(artifacts / MODEL_FILE))


def write_samples(artifacts: Path, samples: Path, rows_file: Path | None = None) -> None:
    """Sample requests (CSV and JSON) and ``expected.json``: the handler's answers (``code/inference.py``)."""
    sys.path.insert(0, str(HERE / "code"))
    import inference  # the handler itself: its MODEL_FILE, MODEL_CLASS and PREDICT_METHOD
    from rows import decode_table

    frame, _ = data()
    rows = [[int(t), float(m), str(p)] for t, m, p in frame.head(5).itertuples(index=False)]
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
