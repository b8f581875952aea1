"""Train the TensorFlow insurance example: a small Keras network pricing quotations, exported for TF Serving.

The data is generated (no download): 4,000 quotations with a year and month (strings, as the quoting
system sends them), a stage, company and product modality (ids) and cover 3 (0/1); the price follows a
fixed formula plus noise. The network is trained with Keras, then exported as a SavedModel with an input
signature: one named input per field (``quotation_id`` is accepted and ignored, so that a request row can
be sent as the quoting system builds it) and one output, ``price``. The signature is served under the
names ``predict`` and ``serving_default``. Writes ``<artifacts>/insurance/1/`` and the samples:
``request.json`` (the JSON list of objects), ``request.csv`` (``;``-separated latin-1 rows with the real
price as an eighth column, as the batch files hold it) and ``expected.json`` (``[quotation_id, price]``
pairs, as the handler answers).

    python model_code/tf_insurance/train.py [--artifacts DIR] [--samples DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # the same sums in the same order on every CPU

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

HERE = Path(__file__).resolve().parent
MODEL_NAME = "insurance"
VERSION = "1"
N_TRAIN = 4000
N_SAMPLES = 6
RTOL = 1e-5
COMPANIES, MODALITIES, STAGES = 5, 8, 3
INT_FIELDS = ("quotation_id", "stage_id", "company_id", "product_modality_id", "cover_3")
STR_FIELDS = ("year", "month")
CSV_COLUMNS = (
    "quotation_id",
    "year",
    "month",
    "stage_id",
    "company_id",
    "product_modality_id",
    "cover_3",
    "price",
)


def generate(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """``n`` quotations and their prices."""
    rows = {
        "quotation_id": rng.integers(100_000_000_000, 100_010_000_000, n),
        "year": rng.choice(["2017", "2018", "2019"], n),
        "month": np.array([f"{m:02d}" for m in rng.integers(1, 13, n)]),
        "stage_id": rng.integers(1, STAGES + 1, n),
        "company_id": rng.integers(1, COMPANIES + 1, n),
        "product_modality_id": rng.integers(1, MODALITIES + 1, n),
        "cover_3": rng.integers(0, 2, n),
    }
    year = rows["year"].astype(np.float64) - 2017
    month = rows["month"].astype(np.float64)
    price = (
        300
        + 120 * rows["company_id"]
        + 45 * rows["product_modality_id"]
        + 200 * rows["cover_3"]
        - 60 * rows["stage_id"]
        + 35 * year
        + 8 * np.sin(month / 12 * 2 * np.pi)
        + rng.normal(0, 10, n)
    )
    rows["price"] = price
    return rows


def features(inputs: dict[str, tf.Tensor]) -> tf.Tensor:
    """The network's input vector from the raw fields (inside the graph: the signature takes raw fields)."""
    year = tf.strings.to_number(inputs["year"], tf.float32) - 2017.0
    month = tf.strings.to_number(inputs["month"], tf.float32)
    columns = [
        tf.one_hot(inputs["company_id"] - 1, COMPANIES),
        tf.one_hot(inputs["product_modality_id"] - 1, MODALITIES),
        tf.one_hot(inputs["stage_id"] - 1, STAGES),
        tf.cast(inputs["cover_3"], tf.float32)[:, None],
        year[:, None],
        tf.sin(month / 12.0 * 2 * np.pi)[:, None],
    ]
    return tf.concat(columns, axis=1)


class Pricing(tf.Module):
    """The exported module: the trained network behind an input signature of named raw fields."""

    def __init__(self, network: keras.Model) -> None:
        super().__init__()
        self.network = network

    @tf.function(
        input_signature=[
            *(tf.TensorSpec([None], tf.int64, name=n) for n in INT_FIELDS),
            *(tf.TensorSpec([None], tf.string, name=n) for n in STR_FIELDS),
        ]
    )
    def predict(self, quotation_id, stage_id, company_id, product_modality_id, cover_3, year, month):  # type: ignore[no-untyped-def]
        del quotation_id  # the id travels with the request; the price does not depend on it
        fields = {
            "stage_id": stage_id,
            "company_id": company_id,
            "product_modality_id": product_modality_id,
            "cover_3": cover_3,
            "year": year,
            "month": month,
        }
        return {"price": self.network(features(fields), training=False)[:, 0]}


def _tensors(rows: dict[str, np.ndarray]) -> dict[str, tf.Tensor]:
    return {
        **{n: tf.constant(rows[n], tf.int64) for n in INT_FIELDS},
        **{n: tf.constant(rows[n].astype(bytes)) for n in STR_FIELDS},
    }


def train(artifacts: Path, samples: Path) -> None:
    """Fit the network, export the SavedModel, write the samples and the expected answers."""
    keras.utils.set_random_seed(0)
    tf.config.experimental.enable_op_determinism()
    rng = np.random.default_rng(7)
    data = generate(rng, N_TRAIN)
    x = features(_tensors(data)).numpy()
    network = keras.Sequential(
        [keras.Input((x.shape[1],)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)]
    )
    network.compile(optimizer=keras.optimizers.Adam(0.05), loss="mse")
    network.fit(x, data["price"] / 1000.0, epochs=40, batch_size=64, verbose=0)
    network.layers[-1].kernel.assign(network.layers[-1].kernel * 1000.0)
    network.layers[-1].bias.assign(network.layers[-1].bias * 1000.0)
    module = Pricing(network)
    target = artifacts / MODEL_NAME / VERSION
    if target.exists():
        shutil.rmtree(target)
    tf.saved_model.save(
        module, str(target), signatures={"predict": module.predict, "serving_default": module.predict}
    )
    write_samples(samples, module, generate(np.random.default_rng(11), N_SAMPLES))


def write_samples(samples: Path, module: Pricing, rows: dict[str, np.ndarray]) -> None:
    """The two request forms (JSON objects, ';' CSV) for the same quotations, and the handler's answer."""
    samples.mkdir(parents=True, exist_ok=True)
    fields = (*INT_FIELDS[:1], *STR_FIELDS, *INT_FIELDS[1:])
    objects = [
        {f: (str(rows[f][i]) if f in STR_FIELDS else int(rows[f][i])) for f in fields}
        for i in range(N_SAMPLES)
    ]
    request = {"signature_name": "predict", "instances": objects}
    (samples / "request.json").write_text(json.dumps(request, indent=2) + "\n", encoding="utf-8")
    lines = [
        ";".join(str(o[c]) for c in CSV_COLUMNS[:-1]) + f";{rows['price'][i]:.2f}"
        for i, o in enumerate(objects)
    ]
    (samples / "request.csv").write_bytes(("\n".join(lines) + "\n").encode("latin-1"))
    prices = module.predict(**_tensors(rows))["price"].numpy()
    # Prices as TF Serving writes a float32: the shortest of 6 or 9 significant digits that round-trips.
    answers = [[o["quotation_id"], float(f"{p:.9g}")] for o, p in zip(objects, prices.tolist(), strict=True)]
    expected = {"predictions": answers, "rtol": RTOL}
    (samples / "expected.json").write_text(json.dumps(expected, indent=2) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifacts", type=Path, default=HERE / "artifacts")
    parser.add_argument("--samples", type=Path, default=HERE / "samples")
    args = parser.parse_args()
    train(args.artifacts, args.samples)


if __name__ == "__main__":
    main()
