"""Train the tabular example: a gradient-boosted regressor on scikit-learn's diabetes dataset.

The dataset ships inside scikit-learn (no download): 442 patients, 10 raw numeric features (age, sex,
bmi, bp, s1..s6; ``load_diabetes(scaled=False)``) and a disease-progression target. Like seed 000's
13-feature CSV, a request is CSV rows of numeric features and the answer is one prediction per row.

Writes ``model.joblib`` to ``--artifacts`` (default ``artifacts/`` beside this file) and the sample
requests and expected predictions to ``--samples``. Training is deterministic (fixed random_state).

    python model_code/tabular/train.py [--artifacts DIR] [--samples DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import joblib
from sklearn.datasets import load_diabetes
from sklearn.ensemble import GradientBoostingRegressor

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # model_code/common.py: shared sample writer

from common import N_SAMPLES, write_samples  # noqa: E402

MODEL_FILE = "model.joblib"


def train(artifacts: Path, samples: Path) -> None:
    """Fit on every row except the sample rows, save the model, write samples and expectations."""
    features, target = load_diabetes(return_X_y=True, scaled=False)
    model = GradientBoostingRegressor(n_estimators=150, max_depth=3, learning_rate=0.05, random_state=0)
    model.fit(features[N_SAMPLES:], target[N_SAMPLES:])
    artifacts.mkdir(parents=True, exist_ok=True)
    joblib.dump(model, artifacts / MODEL_FILE)
    rows = features[:N_SAMPLES]
    write_samples(samples, rows, {"predictions": model.predict(rows).tolist()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifacts", type=Path, default=HERE / "artifacts")
    parser.add_argument("--samples", type=Path, default=HERE / "samples")
    args = parser.parse_args()
    train(args.artifacts, args.samples)


if __name__ == "__main__":
    main()
