"""A LightGBM booster behind one transform_fn that answers (body, content type) itself."""

import io
import json
import os

import lightgbm as lgb
import numpy as np


def model_fn(model_dir):
    return lgb.Booster(model_file=os.path.join(model_dir, "model.txt"))


def transform_fn(model, request_body, content_type, accept):
    if content_type == "text/csv":
        rows = np.loadtxt(io.StringIO(request_body), delimiter=",", ndmin=2)
    elif content_type == "application/json":
        rows = np.array(json.loads(request_body), dtype=float)
    else:
        raise ValueError(json.dumps({"error": f"unsupported content type {content_type}"}))
    scores = model.predict(rows)
    if accept == "text/csv":
        return "\n".join(f"{score:.6f}" for score in scores), accept
    return json.dumps({"scores": scores.tolist()}), "application/json"
