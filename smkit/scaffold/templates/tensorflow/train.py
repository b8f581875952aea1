"""Train a small Keras regressor, export a SavedModel and write the sample requests with their answers.

Replace ``train`` with your own training, or put your SavedModel into ``artifacts/model/1/`` and run
``--samples-only --rows YOUR_ROWS.csv`` (``smkit train <name> --samples-only --rows YOUR_ROWS.csv``) so that
``samples/expected.json`` holds what your model answers for your rows. Runs in the model's environment:
``smkit train <name>``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import samples_io
import tensorflow as tf

EXPORT = Path("model") / "1"


def train(artifacts: Path) -> None:
    """Fit a small dense network and export it as a SavedModel under ``artifacts/model/1``."""
    tf.keras.utils.set_random_seed(0)
    x, y = (a.astype(np.float32) for a in samples_io.regression_data())
    model = tf.keras.Sequential(
        [
            tf.keras.Input((x.shape[1],)),
            tf.keras.layers.Dense(16, activation="relu"),
            tf.keras.layers.Dense(1),
        ]
    )
    model.compile(optimizer="adam", loss="mse")
    model.fit(x, y, epochs=20, verbose=0)
    model.export(str(artifacts / EXPORT))


def write_samples(artifacts: Path, samples: Path, rows_file: Path | None = None) -> None:
    """Sample requests (CSV and JSON) and ``expected.json`` computed with the saved model."""
    rows = samples_io.feature_rows(rows_file, np.float32)
    samples_io.write_requests(samples, rows)
    serve = tf.saved_model.load(str(artifacts / EXPORT)).signatures["serving_default"]
    predictions = next(iter(serve(tf.constant(rows)).values())).numpy()
    samples_io.write_expected(samples, predictions, rtol=1e-4)


if __name__ == "__main__":
    samples_io.main(__doc__, train, write_samples)
