"""An XGBoost booster: CSV or JSON rows into a DMatrix; the toolkit's default output_fn encodes the scores."""

import json
import os

import numpy as np
import xgboost as xgb


def model_fn(model_dir):
    booster = xgb.Booster()
    booster.load_model(os.path.join(model_dir, "xgboost-model.json"))
    return booster


def input_fn(request_body, request_content_type):
    if request_content_type == "text/csv":
        rows = [[float(value) for value in line.split(",")] for line in request_body.strip().splitlines()]
        return xgb.DMatrix(np.array(rows))
    if request_content_type == "application/json":
        return xgb.DMatrix(np.array(json.loads(request_body), dtype=float))
    raise ValueError(f"Content type {request_content_type} is not supported by this script")


def predict_fn(input_data, model):
    return model.predict(input_data)
