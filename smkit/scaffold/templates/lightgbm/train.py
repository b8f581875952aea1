"""Train a small LightGBM regressor and write the artifacts and the sample requests with their answers.

Replace ``train`` with your own training, or put your trained ``model.txt`` into ``artifacts/`` and run
``--samples-only --rows YOUR_ROWS.csv`` (``smkit train <name> --samples-only --rows YOUR_ROWS.csv``) so that
``samples/expected.json`` holds what your model answers for your rows. Runs in the model's environment:
``smkit train <name>``.
"""

from __future__ import annotations

from pathlib import Path

import lightgbm as lgb
import samples_io

MODEL_FILE = "model.txt"


def train(artifacts: Path) -> None:
    """Fit and save ``model.txt``."""
    x, y = samples_io.regression_data()
    params = {"objective": "regression", "num_leaves": 15, "learning_rate": 0.1, "verbose": -1, "seed": 0}
    booster = lgb.train(params, lgb.Dataset(x, label=y), num_boost_round=30)
    artifacts.mkdir(parents=True, exist_ok=True)
    booster.save_model(str(artifacts / MODEL_FILE))


def write_samples(artifacts: Path, samples: Path, rows_file: Path | None = None) -> None:
    """Sample requests (CSV and JSON) and ``expected.json`` computed with the saved model."""
    rows = samples_io.feature_rows(rows_file)
    samples_io.write_requests(samples, rows)
    predictions = lgb.Booster(model_file=str(artifacts / MODEL_FILE)).predict(rows)
    samples_io.write_expected(samples, predictions, rtol=1e-6)


if __name__ == "__main__":
    samples_io.main(__doc__, train, write_samples)
