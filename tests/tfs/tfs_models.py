"""Tiny SavedModels built with TensorFlow for the TF Serving tests, in the layouts SageMaker serves."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


class Affine(tf.Module):
    """``y = x @ w + b`` on ``x: float[None, 3]``; version ``v`` adds ``v`` to every output."""

    def __init__(self, offset: float) -> None:
        super().__init__()
        self.w = tf.Variable([[1.0], [2.0], [3.0]])
        self.b = tf.Variable([offset])

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
    def predict(self, x: tf.Tensor) -> dict[str, tf.Tensor]:
        return {"y": tf.matmul(x, self.w) + self.b}

    @tf.function(
        input_signature=[
            tf.TensorSpec([None], tf.string, name="name"),
            tf.TensorSpec([None, 2], tf.int64, name="counts"),
        ]
    )
    def describe(self, name: tf.Tensor, counts: tf.Tensor) -> dict[str, tf.Tensor]:
        total = tf.reduce_sum(counts, axis=1)
        return {
            "greeting": tf.strings.join(["hello ", name]),
            "total": total,
            "half": tf.cast(total, tf.float64) / 2.0,
            "ok": total > 2,
        }


class Bytes(tf.Module):
    """Binary in, binary out: the length of each input and the input reversed (``*_bytes`` outputs as b64)."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="image_bytes")])
    def predict(self, image_bytes: tf.Tensor) -> dict[str, tf.Tensor]:
        return {
            "length": tf.strings.length(image_bytes),
            "reversed_bytes": tf.strings.reduce_join(
                tf.reverse(tf.strings.bytes_split(image_bytes).to_tensor(), axis=[1]), axis=1
            ),
        }


def save_affine(path: Path, offset: float) -> None:
    module = Affine(offset)
    tf.saved_model.save(
        module, str(path), signatures={"serving_default": module.predict, "describe": module.describe}
    )


def save_bytes(path: Path) -> None:
    module = Bytes()
    tf.saved_model.save(module, str(path), signatures={"serving_default": module.predict})


def save_classify_regress(path: Path) -> None:
    """A TF1-style graph with the classify and regress methods over serialized tf.Example (feature x)."""
    graph = tf.Graph()
    with graph.as_default():
        serialized = tf.compat.v1.placeholder(tf.string, [None], name="tf_example")
        parsed = tf.io.parse_example(serialized, {"x": tf.io.FixedLenFeature([1], tf.float32)})
        x = parsed["x"]
        positive = tf.sigmoid(2.0 * x)
        scores = tf.concat([1.0 - positive, positive], axis=1)
        classes = tf.tile(tf.constant([["negative", "positive"]]), [tf.shape(x)[0], 1])
        regression = 3.0 * x + 0.5
        with tf.compat.v1.Session(graph=graph) as session:
            builder = tf.compat.v1.saved_model.Builder(str(path))
            signatures = {
                "serving_default": tf.compat.v1.saved_model.classification_signature_def(
                    serialized, classes, scores
                ),
                "regress_x": tf.compat.v1.saved_model.regression_signature_def(serialized, regression),
            }
            builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map=signatures)
            builder.save()


def expected_affine(rows: list[list[float]], offset: float) -> list[list[float]]:
    result = np.asarray(rows, dtype=np.float32) @ np.array([[1.0], [2.0], [3.0]], np.float32) + offset
    return [[float(np.float32(v))] for v in result[:, 0]]


def write_models(root: Path) -> None:
    """``half`` (versions 1 and 2), ``binary`` and ``classreg`` under ``root``."""
    save_affine(root / "half" / "1", 1.0)
    save_affine(root / "half" / "2", 2.0)
    save_bytes(root / "binary" / "1")
    save_classify_regress(root / "classreg" / "001")
