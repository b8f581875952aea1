"""Train the iris example: a logistic-regression classifier on scikit-learn's iris dataset.

The dataset ships inside scikit-learn (no download): 150 flowers, 4 measurements, 3 classes. Ten rows
spread over the classes (every 15th) are held out as sample requests; the rest train the model.
Writes ``classifier.joblib`` to ``--artifacts`` and the samples (``expected.json`` holds the class
names as ``predictions`` and the class probabilities as ``probabilities``) to ``--samples``.

    python model_code/iris/train.py [--artifacts DIR] [--samples DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import joblib
import numpy as np
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # model_code/common.py: shared sample writer

from common import N_SAMPLES, write_samples  # noqa: E402

MODEL_FILE = "classifier.joblib"
CLASS_NAMES = ("setosa", "versicolor", "virginica")


def train(artifacts: Path, samples: Path) -> None:
    """Fit on the non-sample rows, save the model, write samples and expectations."""
    features, target = load_iris(return_X_y=True)
    held_out = np.arange(0, len(features), len(features) // N_SAMPLES)[:N_SAMPLES]
    keep = np.setdiff1d(np.arange(len(features)), held_out)
    # Newton's method to a 1e-10 gradient: the optimum itself, whatever the CPU. lbfgs stops at tol=1e-4, at
    # a point that depends on the BLAS kernel's rounding (probabilities 1e-3 apart between AVX2 and AVX-512).
    model = LogisticRegression(solver="newton-cholesky", tol=1e-10, max_iter=100)
    model.fit(features[keep], target[keep])
    artifacts.mkdir(parents=True, exist_ok=True)
    joblib.dump(model, artifacts / MODEL_FILE)
    rows = features[held_out]
    probabilities = model.predict_proba(rows)
    labels = [CLASS_NAMES[i] for i in probabilities.argmax(axis=1)]
    write_samples(samples, rows, {"predictions": labels, "probabilities": probabilities.tolist()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifacts", type=Path, default=HERE / "artifacts")
    parser.add_argument("--samples", type=Path, default=HERE / "samples")
    args = parser.parse_args()
    # One BLAS thread: a multi-threaded OpenBLAS sums in an order that varies with the machine's load, so
    # the committed samples would differ in the last digits between two runs on a busy machine.
    with threadpool_limits(limits=1):
        train(args.artifacts, args.samples)


if __name__ == "__main__":
    main()
