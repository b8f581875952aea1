"""JSON in, JSON out, all four hooks: input_fn reads {"Input": rows} and refuses anything but JSON,
output_fn returns a dict (not bytes) holding the first prediction, which the model server encodes."""

import argparse
import json
import os

import joblib
import pandas as pd
from sklearn.ensemble import RandomForestRegressor


def model_fn(model_dir):
    return joblib.load(os.path.join(model_dir, "model.joblib"))


def input_fn(request_body, request_content_type):
    if request_content_type != "application/json":
        raise ValueError("send application/json: {\"Input\": [[...], ...]}")
    return json.loads(request_body)["Input"]


def predict_fn(rows, model):
    return model.predict(rows)


def output_fn(prediction, accept):
    return {"Output": round(float(prediction[0]), 4)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--estimators", type=int, default=10)
    parser.add_argument("--sm-model-dir", default=os.environ.get("SM_MODEL_DIR"))
    parser.add_argument("--train", default=os.environ.get("SM_CHANNEL_TRAIN"))
    args, _ = parser.parse_known_args()
    frame = pd.read_csv(os.path.join(args.train, "train.csv"))
    model = RandomForestRegressor(n_estimators=args.estimators).fit(frame.drop(columns="target"), frame["target"])
    joblib.dump(model, os.path.join(args.sm_model_dir, "model.joblib"))
