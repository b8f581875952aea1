"""Train a small scikit-learn regressor and write the artifacts and the sample requests with their answers.

Replace ``train`` with your own training, or put your fitted ``model.joblib`` (a Pipeline, a classifier
with ``PREDICT_METHOD = "predict_proba"`` in ``code/inference.py``, ...) into ``artifacts/`` and run
``--samples-only --rows YOUR_ROWS.csv`` (``smkit train <name> --samples-only --rows YOUR_ROWS.csv``; rows in the
model's column order, text for categories) so that ``samples/expected.json`` holds what your model answers
for your rows. Runs in the model's environment:
``smkit train <name>``.
"""

from __future__ import annotations

from pathlib import Path

import joblib
import samples_io

MODEL_FILE = "model.joblib"


def train(artifacts: Path) -> None:
    """Fit and save ``model.joblib``."""
    # Imported here: --samples-only runs with whatever library your own model.joblib needs.
    from sklearn.ensemble import GradientBoostingRegressor

    x, y = samples_io.regression_data()
    model = GradientBoostingRegressor(n_estimators=30, max_depth=3, random_state=0).fit(x, y)
    artifacts.mkdir(parents=True, exist_ok=True)
    joblib.dump(model, artifacts / MODEL_FILE)


def write_samples(artifacts: Path, samples: Path, rows_file: Path | None = None) -> None:
    """Sample requests (CSV and JSON) and ``expected.json``: the handler's answers (``code/inference.py``:
    its MODEL_FILE, PREDICT_METHOD and column handling)."""
    # Your own rows are read as the handler reads a CSV request: text kept for categories.
    rows = samples_io.table_rows(rows_file) if rows_file else samples_io.feature_rows(None).tolist()
    samples_io.write_requests(samples, rows)
    samples_io.write_expected(samples, samples_io.handler_answers(artifacts, rows), rtol=1e-6)


if __name__ == "__main__":
    samples_io.main(__doc__, train, write_samples)
