"""A CatBoost classifier fed a DataFrame with named columns; probabilities as JSON or CSV."""

import io
import json
import os

import pandas as pd
from catboost import CatBoostClassifier

FEATURES = ["f0", "f1", "f2", "f3"]


def model_fn(model_dir):
    model = CatBoostClassifier()
    model.load_model(os.path.join(model_dir, "model.cbm"))
    return model


def input_fn(request_body, request_content_type):
    if request_content_type == "text/csv":
        return pd.read_csv(io.StringIO(request_body), header=None, names=FEATURES)
    if request_content_type == "application/json":
        return pd.DataFrame(json.loads(request_body), columns=FEATURES)
    raise ValueError("This model only supports text/csv and application/json input")


def predict_fn(input_data, model):
    return model.predict_proba(input_data)[:, 1]


def output_fn(prediction, accept):
    if accept == "application/json":
        return json.dumps({"predictions": prediction.round(6).tolist()})
    if accept == "text/csv":
        return "\n".join(str(round(float(p), 6)) for p in prediction)
    raise ValueError(f"Accept {accept} is not supported")
