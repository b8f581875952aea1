"""Train the serial-pipeline example: a featurizer container followed by a regressor.

Data: scikit-learn's diabetes dataset with raw features (``load_diabetes(scaled=False)``; ships with
scikit-learn, no download). The featurizer is a ``ColumnTransformer`` that standardises the 9
measurements and one-hot encodes sex (11 output columns); the regressor is a ``Ridge`` fitted on the
featurizer's output. Writes ``featurizer.joblib`` to ``--featurizer-artifacts`` (default
``model_code/featurizer/artifacts``), ``model.joblib`` to ``--regressor-artifacts`` (default
``model_code/regressor/artifacts``) and the samples to ``--samples``: ``expected.json`` holds the
end-to-end pipeline predictions, ``featurized.csv`` the featurizer's exact CSV answer to
``request.csv`` (the body the regressor receives).

    python model_code/featurizer/train.py [--featurizer-artifacts DIR] [--regressor-artifacts DIR] [--samples DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import joblib
from sklearn.compose import ColumnTransformer
from sklearn.datasets import load_diabetes
from sklearn.linear_model import Ridge
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # model_code/common.py: shared sample writer

from common import N_SAMPLES, write_samples  # noqa: E402

MEASUREMENTS = [0, 2, 3, 4, 5, 6, 7, 8, 9]  # age, bmi, bp, s1..s6
SEX = [1]


def train(featurizer_dir: Path, regressor_dir: Path, samples: Path) -> None:
    """Fit both stages on the non-sample rows, save them, write samples and end-to-end expectations."""
    features, target = load_diabetes(return_X_y=True, scaled=False)
    featurizer = ColumnTransformer(
        [
            ("scale", StandardScaler(), MEASUREMENTS),
            ("sex", OneHotEncoder(categories=[[1.0, 2.0]], sparse_output=False), SEX),
        ]
    )
    train_x, train_y = features[N_SAMPLES:], target[N_SAMPLES:]
    regressor = Ridge(alpha=1.0)
    regressor.fit(featurizer.fit_transform(train_x), train_y)
    featurizer_dir.mkdir(parents=True, exist_ok=True)
    regressor_dir.mkdir(parents=True, exist_ok=True)
    joblib.dump(featurizer, featurizer_dir / "featurizer.joblib")
    joblib.dump(regressor, regressor_dir / "model.joblib")
    rows = features[:N_SAMPLES]
    featurized = featurizer.transform(rows)
    write_samples(samples, rows, {"predictions": regressor.predict(featurized).tolist()})
    lines = "".join(",".join(repr(v) for v in row) + "\n" for row in featurized.tolist())
    (samples / "featurized.csv").write_text(lines, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--featurizer-artifacts", type=Path, default=HERE / "artifacts")
    parser.add_argument("--regressor-artifacts", type=Path, default=HERE.parent / "regressor" / "artifacts")
    parser.add_argument("--samples", type=Path, default=HERE / "samples")
    args = parser.parse_args()
    # One BLAS thread: a multi-threaded OpenBLAS sums in an order that varies with the machine's load, so
    # the committed samples would differ in the last digits between two runs on a busy machine.
    with threadpool_limits(limits=1):
        train(args.featurizer_artifacts, args.regressor_artifacts, args.samples)


if __name__ == "__main__":
    main()
