"""The default handlers of each image a config can name, over a real server, against that image's own code.

What each image does is quoted from its source (docs/handler-semantics.md, "Default handlers per image"):

- the toolkit (sagemaker-inference 1.10.1, ``decoder._csv_to_numpy``): ``np.genfromtxt(StringIO(body),
  dtype=None, delimiter=",")``; its ``default_predict_fn`` raises "Please provide a predict_fn
  implementation." The kit's image decodes as the toolkit does and calls ``model.predict`` when there is one.
- the scikit-learn image (aws/sagemaker-scikit-learn-container ``serving.py`` on sagemaker-containers
  2.8.6.post2 ``_encoders.csv_to_numpy``): ``csv.reader`` rows, ``np.array(rows).squeeze()``,
  ``astype(None)`` (the strings kept when that fails), then ``astype(np.float32)``; ``model.predict``.

The PyTorch and XGBoost images' defaults need their frameworks: tests/frameworks.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import random
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from serving_harness import Server, start_server
from serving_models import write_model

from smkit.serving.wire.errors import BadRequest
from smkit.serving.worker import codecs
from smkit.serving.worker.defaults import TOOLKIT_NO_MODEL_FN, TOOLKIT_NO_PREDICT_FN

HANDLER = """
import numpy as np


class Echo:
    # What predict receives: its type, dtype and shape, and its values.
    def predict(self, data):
        if isinstance(data, np.ndarray) and data.dtype.names is None and data.dtype.kind == "f":
            if np.isnan(data).any() and data.dtype == np.float64:
                return data  # a prediction holding NaN, for the encoder
        return {
            "dtype": str(data.dtype),
            "shape": list(np.shape(data)),
            "values": data.tolist(),
        }


def model_fn(model_dir):
    return Echo()
"""

NO_PREDICT = """
def model_fn(model_dir):
    return object()
"""

JSON_MESSAGE = """
def model_fn(model_dir):
    return None


def transform_fn(model, data, content_type, accept):
    # As JumpStart's scripts answer a type they do not take.
    raise ValueError('{{"error": "unsupported content type {}"}}'.format(content_type or "unknown"))
"""


def toolkit_csv(body: str) -> Any:
    """sagemaker-inference 1.10.1 ``decoder._csv_to_numpy``."""
    return np.genfromtxt(io.StringIO(body), dtype=None, delimiter=",")


def sklearn_image_csv(body: str) -> Any:
    """sagemaker-containers 2.8.6.post2 ``_encoders.csv_to_numpy`` then the scikit-learn image's cast."""
    reader = csv.reader(io.StringIO(body), delimiter=",", quotechar='"', doublequote=True, strict=True)
    array = np.array(list(reader)).squeeze()
    with contextlib.suppress(ValueError):
        array = array.astype(None)
    return array.astype(np.float32)


def described(array: Any) -> dict[str, Any]:
    return {"dtype": str(array.dtype), "shape": list(array.shape), "values": array.tolist()}


def same_json(answer: Any, expected: dict[str, Any]) -> bool:
    return bool(answer == json.loads(json.dumps(expected)))


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    root = tmp_path_factory.mktemp("image-defaults")
    started: dict[str, Server] = {}
    try:
        for name, env in (("kit", {}), ("sklearn", {"SMKIT_FRAMEWORK": "sklearn"})):
            model = write_model(root, name, HANDLER)
            args = ["--model", str(model), "--workers", "1"]
            started[name] = start_server(root, args, env={"SAGEMAKER_MODEL_SERVER_WORKERS": "1", **env})
        yield started
    finally:
        for server in started.values():
            server.stop()


NUMERIC_BODIES = ["1,2,3", "1,2\n3,4", "1.5,2\n3,4", "0.5,1.5\n2.5,3.5", "7", "1e3,2", "-1,+2,3\n"]


@pytest.mark.parametrize("body", NUMERIC_BODIES)
def test_kit_image_decodes_csv_as_the_toolkit_and_calls_model_predict(
    servers: dict[str, Server], body: str
) -> None:
    answer = servers["kit"].invoke(body, "text/csv", "application/json")
    assert answer.status == 200, answer.body
    assert same_json(answer.json(), described(toolkit_csv(body)))


@pytest.mark.parametrize("body", NUMERIC_BODIES)
def test_sklearn_image_decodes_csv_as_that_image_and_calls_model_predict(
    servers: dict[str, Server], body: str
) -> None:
    answer = servers["sklearn"].invoke(body, "text/csv", "application/json")
    assert answer.status == 200, answer.body
    assert same_json(answer.json(), described(sklearn_image_csv(body)))


def test_integer_columns_stay_integers_and_mixed_columns_are_records(servers: dict[str, Server]) -> None:
    assert servers["kit"].invoke("1,2,3", "text/csv").json()["dtype"] == "int64"
    mixed = servers["kit"].invoke("1.5,2\n3,4", "text/csv").json()
    assert mixed["shape"] == [2] and "('f0', '<f8'), ('f1', '<i8')" in mixed["dtype"]
    # The scikit-learn image: float32, and one row is squeezed to one dimension.
    assert servers["sklearn"].invoke("1,2,3", "text/csv").json() == {
        "dtype": "float32",
        "shape": [3],
        "values": [1.0, 2.0, 3.0],
    }


@pytest.mark.parametrize("image", ["kit", "sklearn"])
@pytest.mark.parametrize("body", ["1,2,abc", "abc", "1,2,abc\n4,5,6"])
def test_text_in_csv_is_never_a_200_with_nan(servers: dict[str, Server], image: str, body: str) -> None:
    answer = servers[image].invoke(body, "text/csv", "application/json")
    json.loads(answer.body)  # whatever the status, the body is JSON
    assert b"NaN" not in answer.body
    if image == "sklearn":  # astype(np.float32) of the text fails, as on the image: 500
        assert answer.status == 500
        assert "could not convert string to float" in answer.json()["message"]
    else:  # the toolkit's decoder gives a record with a text field; the model sees no NaN
        assert answer.status == 200
        assert answer.json()["values"] == json.loads(json.dumps(toolkit_csv(body).tolist()))
    assert servers[image].invoke("1,2", "text/csv").status == 200  # still serving


def test_an_empty_field_is_the_toolkits_filling_on_the_kit_and_an_error_on_sklearn(
    servers: dict[str, Server],
) -> None:
    assert servers["kit"].invoke("1,,3", "text/csv").json()["values"] == toolkit_csv("1,,3").tolist()
    answer = servers["sklearn"].invoke("1,,3", "text/csv")
    assert answer.status == 500 and "could not convert string to float" in answer.json()["message"]


def test_nan_in_a_prediction_is_refused_as_json_and_written_as_csv(servers: dict[str, Server]) -> None:
    answer = servers["kit"].invoke("nan,1.5", "text/csv", "application/json")
    assert answer.status == 500
    assert answer.json()["message"] == codecs.NOT_JSON
    as_csv = servers["kit"].invoke("nan,1.5", "text/csv", "text/csv")
    assert as_csv.status == 200 and as_csv.body == b"nan\n1.5\n"


def test_kit_image_without_predict_gives_the_toolkits_sentence(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    root = tmp_path_factory.mktemp("no-predict")
    server = start_server(root, ["--model", str(write_model(root, "m", NO_PREDICT)), "--workers", "1"])
    try:
        answer = server.invoke("1,2", "text/csv")
    finally:
        server.stop()
    assert answer.status == 500
    assert answer.json()["message"].startswith(TOOLKIT_NO_PREDICT_FN + " (the loaded object has no predict")
    assert "Please provide a predict_fn implementation." in TOOLKIT_NO_PREDICT_FN
    assert "Please provide a model_fn implementation." in TOOLKIT_NO_MODEL_FN


def test_a_handler_message_that_is_json_is_the_body_as_written(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    root = tmp_path_factory.mktemp("json-message")
    server = start_server(root, ["--model", str(write_model(root, "m", JSON_MESSAGE)), "--workers", "1"])
    try:
        answer = server.invoke("x", "text/plain")
    finally:
        server.stop()
    assert answer.status == 500
    assert answer.headers["content-type"] == "application/json"
    assert answer.body == b'{"error": "unsupported content type text/plain"}'


def test_csv_decoder_equals_genfromtxt_on_random_bodies() -> None:
    """The fast paths (``loadtxt``) never change what ``genfromtxt(dtype=None)`` would return."""
    tokens = [
        "1",
        "-2",
        "+3",
        "0",
        "1.5",
        "-0.25",
        "1e3",
        "nan",
        "inf",
        "-inf",
        "abc",
        "",
        "True",
        " 4",
        "007",
    ]
    rng = random.Random(48)
    for _ in range(600):
        rows, cols = rng.randint(1, 3), rng.randint(1, 3)
        body = "\n".join(",".join(rng.choice(tokens) for _ in range(cols)) for _ in range(rows))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                expected = toolkit_csv(body)
            except (ValueError, TypeError):  # the toolkit answers 500, smkit 400 (a deliberate difference)
                with pytest.raises(BadRequest):
                    codecs.decode(body, "text/csv")
                continue
            decoded = codecs.decode(body, "text/csv")
        assert decoded.dtype == expected.dtype and decoded.shape == expected.shape, body
        assert str(decoded.tolist()) == str(expected.tolist()), body
