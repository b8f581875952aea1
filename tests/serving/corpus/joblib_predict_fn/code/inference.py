"""A scikit-learn model saved with joblib: model_fn loads it, predict_fn calls predict; the toolkit's
default input_fn and output_fn decode the request and encode the answer."""

import os

import joblib


def model_fn(model_dir):
    path = os.path.join(model_dir, "model.joblib")
    print("model_fn: loading", path)
    return joblib.load(path)


def predict_fn(input_data, model):
    print("predict_fn: rows of shape", getattr(input_data, "shape", None))
    return model.predict(input_data)
