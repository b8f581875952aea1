"""No ``inference.py``: the container's own conversions on ``/invocations`` and its ``/ping``.

JSON passes through when it is already a TF Serving request, JSON Lines and bare JSON become
``instances``, CSV rows become instances, other content types get 415; the custom attributes choose the
model, version and method; ``SAGEMAKER_TFS_DEFAULT_MODEL_NAME`` is the model otherwise.
"""

from __future__ import annotations

import base64
import json

import pytest
from tfs_harness import TfsServer

pytestmark = pytest.mark.usefixtures("plain_server")
ATTRIBUTES = "X-Amzn-SageMaker-Custom-Attributes"


def test_ping_reports_the_default_model_available(plain_server: TfsServer) -> None:
    assert plain_server.request("GET", "/ping").status == 200
    missing = plain_server.request("GET", "/ping", **{ATTRIBUTES.replace("-", "_"): "tfs-model-name=nope"})
    assert missing.status == 502


def test_tf_serving_json_passes_through_to_the_default_model(plain_server: TfsServer) -> None:
    reply = plain_server.invoke('{"instances": [[1, 2, 3]]}', Accept="application/json")
    assert reply.status == 200
    # A JSON Accept strips TF Serving's newlines; without one its body comes back as written.
    assert reply.text == '{    "predictions": [[16.0]    ]}'
    assert reply.headers["content-type"] == "application/json"
    raw = plain_server.invoke('{"instances": [[1, 2, 3]]}')
    assert raw.text == '{\n    "predictions": [[16.0]\n    ]\n}'
    lines = plain_server.invoke(
        '{"instances": [[1, 2, 3]]}', Accept="application/jsonlines, application/json"
    )
    assert lines.headers["content-type"] == "application/jsonlines"


def test_bare_json_lists_and_json_lines_become_instances(plain_server: TfsServer) -> None:
    assert plain_server.invoke("[1, 2, 3]").json() == {"predictions": [[16.0]]}
    assert plain_server.invoke("[[1, 2, 3], [0, 0, 1]]").json() == {"predictions": [[16.0], [5.0]]}
    lines = plain_server.invoke("[1, 2, 3]\n[0, 0, 1]\n", "application/jsonlines")
    assert lines.json() == {"predictions": [[16.0], [5.0]]}


def test_csv_rows_become_instances(plain_server: TfsServer) -> None:
    reply = plain_server.invoke("1,2,3\n0,0,1\n", "text/csv")
    assert reply.status == 200
    assert reply.json() == {"predictions": [[16.0], [5.0]]}


def test_unsupported_content_type_is_415(plain_server: TfsServer) -> None:
    reply = plain_server.invoke("1 2 3", "text/plain")
    assert (reply.status, reply.text) == (415, '{"error": "Unsupported Media Type: text/plain"}')
    # The comparison is exact, as in the container: parameters make it unsupported too.
    assert plain_server.invoke("[1, 2, 3]", "application/json; charset=utf-8").status == 415


def test_custom_attributes_choose_model_version_and_method(plain_server: TfsServer) -> None:
    header = ATTRIBUTES.replace("-", "_")
    v1 = plain_server.invoke("[1, 2, 3]", **{header: "tfs-model-name=half,tfs-model-version=1"})
    assert v1.json() == {"predictions": [[15.0]]}
    classify = plain_server.invoke(
        '{"examples": [{"x": 0.5}]}', **{header: "tfs-model-name=classreg,tfs-method=classify"}
    )
    assert classify.status == 200
    assert classify.json() == {"results": [[["negative", 0.268941402], ["positive", 0.731058598]]]}
    regress = plain_server.invoke(
        '{"signature_name": "regress_x", "examples": [{"x": 1.5}]}',
        **{header: "tfs-method=regress,tfs-model-name=classreg"},
    )
    assert regress.json() == {"results": [5.0]}
    b64 = base64.b64encode(b"abc").decode()
    binary = plain_server.invoke(
        json.dumps({"instances": [{"b64": b64}]}), **{header: "tfs-model-name=binary"}
    )
    assert binary.json()["predictions"][0]["length"] == 3


def test_tf_serving_errors_come_back_with_their_status(plain_server: TfsServer) -> None:
    reply = plain_server.invoke('{"instances": "x"}')
    assert reply.status == 400
    # nginx un-escapes 'instances' once, so this body is valid JSON.
    assert reply.json() == {
        "error": 'JSON Value: {\n    "instances": "x"\n} Excepting \'instances\' to be an list/array'
    }
    missing = plain_server.invoke("[1, 2, 3]", X_Amzn_SageMaker_Custom_Attributes="tfs-model-name=nope")
    assert (missing.status, missing.json()) == (
        404,
        {"error": "Servable not found for request: Latest(nope)"},
    )


def test_tfs_location_proxies_the_rest_api_and_other_paths_are_404(plain_server: TfsServer) -> None:
    status = plain_server.request("GET", "/tfs/v1/models/binary")
    assert status.status == 200
    assert status.json()["model_version_status"][0]["state"] == "AVAILABLE"
    other = plain_server.request("GET", "/metrics")
    assert (other.status, other.text) == (404, '{"error": "Not Found"}')
