"""Several joblib models in one folder (model_1.joblib, model_2.joblib, ...), all asked for every request;
the answer is, row by row, the largest of their predictions. Only JSON requests are understood."""

import json
import logging
import sys
from pathlib import Path

import joblib
import numpy as np

log = logging.getLogger("multiple_models")
log.setLevel(logging.INFO)
log.addHandler(logging.StreamHandler(sys.stdout))


def model_fn(model_dir):
    files = sorted(Path(model_dir).glob("model_*.joblib"))
    log.info("loading %d models from %s", len(files), model_dir)
    return [joblib.load(path) for path in files]


def input_fn(body, content_type):
    if content_type != "application/json":
        raise Exception(f"only application/json is understood, not {content_type}")
    return np.asarray(json.loads(body), dtype=float)


def predict_fn(rows, models):
    answers = [model.predict(rows) for model in models]
    for number, answer in enumerate(answers, start=1):
        log.info("model %d answered %s", number, answer)
    return np.maximum.reduce(answers)
