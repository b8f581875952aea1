"""The same two hooks written another way: pathlib for the file, no logging, predict on whatever the
default input_fn decoded."""

from pathlib import Path

import joblib


def model_fn(model_dir):
    return joblib.load(Path(model_dir) / "model.joblib")


def predict_fn(data, estimator):
    return estimator.predict(data)
