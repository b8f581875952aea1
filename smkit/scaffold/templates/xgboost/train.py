"""Train a small XGBoost regressor and write the artifacts and the sample requests with their answers.

Replace ``train`` with your own training, or put your trained ``model.json`` into ``artifacts/`` and run
``--samples-only --rows YOUR_ROWS.csv`` (``smkit train <name> --samples-only --rows YOUR_ROWS.csv``) so that
``samples/expected.json`` holds what your model answers for your rows. Runs in the model's environment:
``smkit train <name>``.
"""

from __future__ import annotations

from pathlib import Path

import samples_io
import xgboost as xgb

MODEL_FILE = "model.json"


def train(artifacts: Path) -> None:
    """Fit and save ``model.json``."""
    x, y = samples_io.regression_data()
    params = {"objective": "reg:squarederror", "max_depth": 3, "eta": 0.2, "seed": 0, "nthread": 1}
    booster = xgb.train(params, xgb.DMatrix(x, label=y), num_boost_round=30)
    artifacts.mkdir(parents=True, exist_ok=True)
    booster.save_model(str(artifacts / MODEL_FILE))


def write_samples(artifacts: Path, samples: Path, rows_file: Path | None = None) -> None:
    """Sample requests (CSV and JSON) and ``expected.json`` computed with the saved model."""
    rows = samples_io.feature_rows(rows_file)
    samples_io.write_requests(samples, rows)
    booster = xgb.Booster()
    booster.load_model(str(artifacts / MODEL_FILE))
    samples_io.write_expected(samples, booster.predict(xgb.DMatrix(rows)), rtol=1e-5)


if __name__ == "__main__":
    samples_io.main(__doc__, train, write_samples)
