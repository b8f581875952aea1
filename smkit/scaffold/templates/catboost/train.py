"""Train a small CatBoost classifier on a DataFrame with a categorical column; write artifacts and samples.

Replace ``train`` with your own training, or put your ``model.cbm`` into ``artifacts/`` and run
``--samples-only --rows YOUR_ROWS.csv`` (``smkit train <name> --samples-only --rows YOUR_ROWS.csv``; rows
in the model's column order, text for categories) so that ``samples/expected.json`` holds what your
model answers for your rows. Runs in the model's environment: ``smkit train <name>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import samples_io

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
    """Sample requests (CSV and JSON) and ``expected.json``: the handler's answers (``code/inference.py``:
    its MODEL_FILE, MODEL_CLASS and PREDICT_METHOD)."""
    frame, _ = data()
    rows = [[int(t), float(m), str(p)] for t, m, p in frame.head(5).itertuples(index=False)]
    if rows_file is not None:  # your own rows: comma-separated, no header, in the model's column order
        rows = samples_io.table_rows(rows_file)
    samples_io.write_requests(samples, rows)
    samples_io.write_expected(samples, samples_io.handler_answers(artifacts, rows), rtol=1e-6)


if __name__ == "__main__":
    samples_io.main(__doc__, train, write_samples)
