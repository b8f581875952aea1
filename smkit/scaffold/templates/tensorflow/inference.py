"""SageMaker handler for a TensorFlow/Keras model exported with ``model.export("model/1")`` (a SavedModel).

Served by the kit's image with TensorFlow from requirements.txt; for AWS's TensorFlow Serving image see
docs/tensorflow-serving.md. Requests and responses: see ``rows.py``. Hook contract:
docs/handler-semantics.md.
"""

from __future__ import annotations

import os

import tensorflow as tf
from rows import decode_rows, encode_predictions

MODEL_DIR = os.path.join("model", "1")


def model_fn(model_dir):
    """Load the SavedModel's serving function."""
    return tf.saved_model.load(os.path.join(model_dir, MODEL_DIR)).signatures["serving_default"]


def input_fn(input_data, content_type):
    """Rows of features as a float32 tensor."""
    return tf.constant(decode_rows(input_data, content_type), dtype=tf.float32)


def predict_fn(data, model):
    """The first output of the serving signature."""
    outputs = model(data)
    return next(iter(outputs.values())).numpy()


def output_fn(prediction, accept):
    """``{"predictions": [...]}`` (or CSV)."""
    return encode_predictions(prediction, accept)
