"""No model file at all: model_fn hands back a placeholder and predict_fn answers the mean of the numbers
it was sent, with NumPy only."""

import numpy as np


def model_fn(model_dir):
    return {"loaded_from": None}


def predict_fn(values, _placeholder):
    return np.mean(values)
