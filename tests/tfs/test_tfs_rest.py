"""TensorFlow Serving's REST API served by TensorFlow: status, metadata, predict, classify, regress, errors.

One server (no inference.py) over three SavedModels built by TensorFlow in the test session; requests go
to TensorFlow Serving's REST port, as a handler's ``context.rest_uri`` does, and bodies are compared byte
for byte with what TensorFlow Serving writes.
"""

from __future__ import annotations

import base64
import json

import pytest
from tfs_harness import TfsServer

pytestmark = pytest.mark.usefixtures("plain_server")


def test_model_status_lists_every_version_highest_first(plain_server: TfsServer) -> None:
    reply = plain_server.rest("GET", "/v1/models/half")
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/json"
    statuses = reply.json()["model_version_status"]
    assert [s["version"] for s in statuses] == ["2", "1"]
    assert statuses[0] == {
        "version": "2",
        "state": "AVAILABLE",
        "status": {"error_code": "OK", "error_message": ""},
    }
    assert (
        plain_server.rest("GET", "/v1/models/half/versions/1").json()["model_version_status"][0]["version"]
        == "1"
    )
    # Leading zeros of the version folder are dropped, as the container's model config does.
    assert plain_server.rest("GET", "/v1/models/classreg").json()["model_version_status"][0]["version"] == "1"


def test_metadata_names_signatures_with_dtypes_and_shapes(plain_server: TfsServer) -> None:
    reply = plain_server.rest("GET", "/v1/models/half/versions/1/metadata")
    assert reply.status == 200
    doc = reply.json()
    assert doc["model_spec"] == {"name": "half", "signature_name": "", "version": "1"}
    signatures = doc["metadata"]["signature_def"]["signature_def"]
    assert {"serving_default", "describe"} <= set(signatures)
    x = signatures["serving_default"]["inputs"]["x"]
    assert x["dtype"] == "DT_FLOAT"
    assert [d["size"] for d in x["tensor_shape"]["dim"]] == ["-1", "3"]
    assert signatures["serving_default"]["method_name"] == "tensorflow/serving/predict"
    assert set(signatures["describe"]["outputs"]) == {"greeting", "total", "half", "ok"}
    classreg = plain_server.rest("GET", "/v1/models/classreg/metadata").json()["metadata"]["signature_def"]
    assert classreg["signature_def"]["serving_default"]["method_name"] == "tensorflow/serving/classify"


def test_predict_row_format_latest_version_exact_body(plain_server: TfsServer) -> None:
    reply = plain_server.rest("POST", "/v1/models/half:predict", '{"instances": [[1, 2, 3], [0.5, 0, 0]]}')
    assert reply.status == 200
    # RapidJSON's pretty writer with one prediction per line, floats with a trailing .0 (json_tensor.cc).
    assert reply.text == '{\n    "predictions": [[16.0], [2.5]\n    ]\n}'
    older = plain_server.rest("POST", "/v1/models/half/versions/1:predict", '{"instances": [[1, 2, 3]]}')
    assert older.json() == {"predictions": [[15.0]]}


def test_predict_float32_formatting_round_trips(plain_server: TfsServer) -> None:
    reply = plain_server.rest(
        "POST", "/v1/models/half:predict", '{"instances": [[1234.567, 0, 0], [0.1, 0, 0]]}'
    )
    # float32 1236.567017: six digits (1236.57) do not round-trip, so nine are written; 2.1 does.
    assert reply.text == '{\n    "predictions": [[1236.56702], [2.1]\n    ]\n}'


def test_predict_columnar_format(plain_server: TfsServer) -> None:
    reply = plain_server.rest("POST", "/v1/models/half:predict", '{"inputs": [[1, 2, 3]]}')
    assert reply.status == 200
    assert reply.text == '{\n    "outputs": [\n        [\n            16.0\n        ]\n    ]\n}'
    named = plain_server.rest("POST", "/v1/models/half:predict", '{"inputs": {"x": [[1, 2, 3]]}}')
    assert named.json() == {"outputs": [[16.0]]}


def test_signature_name_with_named_inputs_and_several_outputs(plain_server: TfsServer) -> None:
    body = {
        "signature_name": "describe",
        "instances": [{"name": "ada", "counts": [1, 2]}, {"name": "bob", "counts": [0, 1]}],
    }
    reply = plain_server.rest("POST", "/v1/models/half:predict", json.dumps(body))
    assert reply.status == 200
    assert reply.json() == {
        "predictions": [
            {"greeting": "hello ada", "half": 1.5, "ok": True, "total": 3},
            {"greeting": "hello bob", "half": 0.5, "ok": False, "total": 1},
        ]
    }
    columnar = {"signature_name": "describe", "inputs": {"name": ["ada"], "counts": [[1, 2]]}}
    assert plain_server.rest("POST", "/v1/models/half:predict", json.dumps(columnar)).json() == {
        "outputs": {"greeting": ["hello ada"], "half": [1.5], "ok": [True], "total": [3]}
    }


def test_b64_input_and_bytes_output(plain_server: TfsServer) -> None:
    data = [b"hello", bytes([0, 1, 2, 255])]
    body = {"instances": [{"b64": base64.b64encode(d).decode()} for d in data]}
    reply = plain_server.rest("POST", "/v1/models/binary:predict", json.dumps(body))
    assert reply.status == 200
    predictions = reply.json()["predictions"]
    assert [p["length"] for p in predictions] == [5, 4]
    # Outputs whose name ends in _bytes come back base64-encoded.
    assert [base64.b64decode(p["reversed_bytes"]["b64"]) for p in predictions] == [d[::-1] for d in data]


def test_classify_and_regress(plain_server: TfsServer) -> None:
    reply = plain_server.rest(
        "POST", "/v1/models/classreg:classify", '{"examples": [{"x": 0.5}, {"x": -1.0}]}'
    )
    assert reply.status == 200
    assert reply.text == (
        '{\n    "results": [[["negative", 0.268941402], ["positive", 0.731058598]], '
        '[["negative", 0.880797088], ["positive", 0.119202919]]\n    ]\n}'
    )
    regress = '{"signature_name": "regress_x", "examples": [{"x": 0.5}, {"x": -1.0}]}'
    reply = plain_server.rest("POST", "/v1/models/classreg:regress", regress)
    assert reply.status == 200
    assert reply.text == '{\n    "results": [2.0, -2.5]\n}'
    with_context = '{"signature_name": "regress_x", "context": {"x": 2.0}, "examples": [{}, {"x": 1.5}]}'
    assert plain_server.rest("POST", "/v1/models/classreg:regress", with_context).json() == {
        "results": [6.5, 5.0]
    }


ERRORS = [
    # (path, body, status, exact body) as TensorFlow Serving answers them.
    ("/v1/models/half:predict", "", 400, '{ "error": "JSON Parse error: The document is empty" }'),
    ("/v1/models/half:predict", "[1]", 400, '{ "error": "JSON Value: [\\n    1\\n] Is not object" }'),
    ("/v1/models/half:predict", "{}", 400, "{ \"error\": \"Missing \\'inputs\\' or \\'instances\\' key\" }"),
    (
        "/v1/models/half:predict",
        '{"instances": []}',
        400,
        '{ "error": "JSON Value: {\\n    \\"instances\\": []\\n} No values in \\\'instances\\\' array" }',
    ),
    (
        "/v1/models/half:predict",
        '{"instances": [[1, 2, 3], [1, 2]]}',
        400,
        '{ "error": "Failed to process element: 1 of \\\'instances\\\' list. Error: INVALID_ARGUMENT: '
        'Expecting tensor size: 3 but got: 2" }',
    ),
    (
        "/v1/models/half:predict",
        '{"instances": [["a", 2, 3]]}',
        400,
        '{ "error": "Failed to process element: 0 of \\\'instances\\\' list. Error: INVALID_ARGUMENT: '
        'JSON Value: \\"a\\" Type: String is not of expected type: float" }',
    ),
    (
        "/v1/models/half:predict",
        '{"instances": [[1, 2, 3]], "signature_name": "nope"}',
        400,
        '{ "error": "Serving signature name: \\"nope\\" not found in signature def" }',
    ),
    (
        "/v1/models/half:predict",
        '{"inputs": {"y": [[1, 2, 3]]}}',
        400,
        '{ "error": "Missing named input: x in \\\'inputs\\\' object." }',
    ),
    (
        "/v1/models/nope:predict",
        '{"instances": [1]}',
        404,
        '{ "error": "Servable not found for request: Latest(nope)" }',
    ),
    (
        "/v1/models/half/versions/7:predict",
        '{"instances": [1]}',
        404,
        '{ "error": "Servable not found for request: Specific(half, 7)" }',
    ),
    ("/v1/models/half:explain", "{}", 400, '{ "error": "Malformed request: POST /v1/models/half:explain" }'),
    (
        "/v1/models/binary:predict",
        '{"instances": [{"b64": "%%%"}]}',
        400,
        '{ "error": "Failed to process element: 0 of \\\'instances\\\' list. Error: INVALID_ARGUMENT: '
        'Unable to base64 decode" }',
    ),
    (
        "/v1/models/half:classify",
        '{"examples": [{"x": 1.0}]}',
        400,
        '{ "error": "Expected classification signature method_name to be tensorflow/serving/classify. '
        'Was: tensorflow/serving/predict" }',
    ),
]


@pytest.mark.parametrize(
    ("path", "body", "status", "expected"), ERRORS, ids=[f"{e[2]}-{i}" for i, e in enumerate(ERRORS)]
)
def test_bad_requests_get_tf_serving_status_and_body(
    plain_server: TfsServer, path: str, body: str, status: int, expected: str
) -> None:
    reply = plain_server.rest("POST", path, body)
    assert (reply.status, reply.text) == (status, expected)
    assert reply.headers["content-type"] == "application/json"


def test_error_inside_the_graph_is_the_kernel_message(plain_server: TfsServer) -> None:
    reply = plain_server.rest("POST", "/v1/models/half:predict", '{"instances": [[1, 2]]}')
    assert reply.status == 400
    # The node named after the message depends on TensorFlow's graph optimizations.
    assert reply.text.startswith(
        '{ "error": "Matrix size-incompatible: In[0]: [1,2], In[1]: [3,1]\\n\\t [[{{node '
    )


def test_status_errors(plain_server: TfsServer) -> None:
    assert (
        plain_server.rest("GET", "/v1/models/nope").text
        == '{ "error": "Could not find any versions of model nope" }'
    )
    reply = plain_server.rest("GET", "/v1/models/half/versions/9")
    assert (reply.status, reply.text) == (404, '{ "error": "Could not find version 9 of model half" }')
    assert plain_server.rest("GET", "/v1/models").status == 400
    assert plain_server.rest("GET", "/v2/models/half").status == 404


def test_server_keeps_serving_after_errors(plain_server: TfsServer) -> None:
    for _ in range(3):
        assert plain_server.rest("POST", "/v1/models/half:predict", "{oops").status == 400
    assert plain_server.rest("POST", "/v1/models/half:predict", '{"instances": [[0, 0, 0]]}').json() == {
        "predictions": [[2.0]]
    }
