"""``inference.py`` handlers under the container's Python front end, against real SavedModels.

The example's ``handler`` (JSON list of objects with ids, ``;``-separated latin-1 CSV, ids zipped back
onto the predictions) packaged with ``smkit package``; an ``input_handler`` / ``output_handler`` pair
that echoes its ``Context``, imports from ``code/lib`` and raises on demand; handler precedence.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import tfs_harness
from tfs_harness import TfsServer, model_dir

from smkit.tfs.frontend import HandlerImportError, load_handler

ATTRIBUTES = "X_Amzn_SageMaker_Custom_Attributes"

PAIR = """
import json

from helper import tag  # code/lib/helper.py


def input_handler(data, context):
    if context.request_content_type == "application/x-raise":
        raise RuntimeError("refused by input_handler")
    return data.read()


def output_handler(response, context):
    try:
        tfs = response.json()
    except ValueError:
        tfs = response.text
    answer = {"context": context._asdict(), "status": response.status_code, "tfs": tfs, "tag": tag}
    if context.accept_header == "application/x-tuple3":
        return answer, "application/json", "extra"
    return json.dumps(answer), context.accept_header
"""


def approx_pairs(got: list[list[float]], expected: dict[str, object]) -> None:
    pairs = expected["predictions"]
    assert [g[0] for g in got] == [p[0] for p in pairs]  # type: ignore[index,union-attr]
    assert [g[1] for g in got] == pytest.approx([p[1] for p in pairs], rel=expected["rtol"])  # type: ignore[index,union-attr]


@pytest.fixture(scope="module")
def insurance_server(insurance_archive: tuple[Path, str], server_tmp: Path) -> Iterator[TfsServer]:
    server = tfs_harness.start(server_tmp, insurance_archive[0])
    yield server
    server.stop()


@pytest.fixture(scope="module")
def pair_server(saved_models: Path, server_tmp: Path) -> Iterator[TfsServer]:
    code = {
        "inference.py": PAIR,
        "lib/helper.py": "tag = 'from code/lib'\n",
        "requirements.txt": "not-installed-anywhere==9.9\n",
    }
    root = model_dir(server_tmp / "pair", saved_models, ("half", "classreg"), code)
    server = tfs_harness.start(server_tmp, root, env={"SAGEMAKER_TFS_DEFAULT_MODEL_NAME": "half"})
    yield server
    server.stop()


def test_example_handler_json_list_of_objects(insurance_server: TfsServer, insurance: Path) -> None:
    expected = json.loads((insurance / "samples" / "expected.json").read_text())
    body = (insurance / "samples" / "request.json").read_bytes()
    reply = insurance_server.invoke(body, Accept="application/json")
    assert reply.status == 200, reply.text
    assert reply.headers["content-type"] == "application/json"
    approx_pairs(reply.json()["predictions"], expected)
    bare = json.dumps(json.loads(body)["instances"])
    approx_pairs(insurance_server.invoke(bare).json()["predictions"], expected)


def test_example_handler_semicolon_latin1_csv(insurance_server: TfsServer, insurance: Path) -> None:
    expected = json.loads((insurance / "samples" / "expected.json").read_text())
    body = (insurance / "samples" / "request.csv").read_bytes()
    reply = insurance_server.invoke(body, "text/csv")
    assert reply.status == 200, reply.text
    approx_pairs(reply.json()["predictions"], expected)
    as_csv = insurance_server.invoke(body, "text/csv", Accept="text/csv")
    assert as_csv.headers["content-type"] == "text/csv"
    rows = [line.split(";") for line in as_csv.body.decode("latin-1").splitlines()]
    approx_pairs([[int(i), float(p)] for i, p in rows], expected)


def test_example_handler_errors_are_500_with_the_message(insurance_server: TfsServer) -> None:
    reply = insurance_server.invoke("a b c", "text/plain")
    assert (reply.status, reply.json()) == (500, {"error": "unsupported content type text/plain"})
    # TF Serving's 400 reaches the client through the handler, which raises it as the 500's message.
    missing = insurance_server.invoke('[{"quotation_id": 1, "year": "2019"}]')
    assert missing.status == 500
    assert "Failed to process element: 0 of \\'instances\\' list" in missing.json()["error"]
    assert (
        "keys must be equal to: company_id,cover_3,month,product_modality_id,quotation_id,stage_id,year"
        in missing.json()["error"]
    )
    assert insurance_server.request("GET", "/ping").status == 200


def test_context_fields(pair_server: TfsServer) -> None:
    headers = {
        ATTRIBUTES: "tfs-model-name=half,tfs-model-version=1,trace=abc",
        "Accept": "application/json",
    }
    body = '{"instances": [[1, 2, 3]]}'
    reply = pair_server.invoke(body, "application/json", **headers)
    assert reply.status == 200, reply.text
    answer = reply.json()
    context = answer["context"]
    assert context["model_name"] == "half"
    assert context["model_version"] == "1"
    assert context["method"] is None
    assert (
        context["rest_uri"] == f"http://localhost:{pair_server.rest_port}/v1/models/half/versions/1:predict"
    )
    assert context["grpc_port"] == str(pair_server.rest_port - 1)
    assert context["custom_attributes"] == "tfs-model-name=half,tfs-model-version=1,trace=abc"
    assert context["request_content_type"] == "application/json"
    assert context["accept_header"] == "application/json"
    assert context["content_length"] == len(body)
    assert answer["tfs"] == {"predictions": [[15.0]]}
    assert answer["tag"] == "from code/lib"


def test_context_defaults_and_default_model(pair_server: TfsServer) -> None:
    reply = pair_server.request("POST", "/invocations", '{"instances": [[0, 0, 0]]}')
    context = reply.json()["context"]
    assert (context["request_content_type"], context["accept_header"]) == (
        "application/json",
        "application/json",
    )
    assert context["model_name"] is None
    assert context["rest_uri"].endswith("/v1/models/half:predict")
    assert reply.json()["tfs"] == {"predictions": [[2.0]]}


def test_second_model_selected_by_custom_attributes(pair_server: TfsServer) -> None:
    reply = pair_server.invoke(
        '{"examples": [{"x": 0.5}]}', **{ATTRIBUTES: "tfs-model-name=classreg,tfs-method=classify"}
    )
    assert reply.json()["context"]["rest_uri"].endswith("/v1/models/classreg:classify")
    assert reply.json()["tfs"] == {"results": [[["negative", 0.268941402], ["positive", 0.731058598]]]}


def test_tf_serving_error_reaches_the_output_handler(pair_server: TfsServer) -> None:
    reply = pair_server.invoke('{"instances": [[1, 2, 3]]}', **{ATTRIBUTES: "tfs-model-name=nope"})
    assert reply.status == 200  # the output handler decides; it chose to answer
    assert reply.json()["status"] == 404
    assert reply.json()["tfs"] == {"error": "Servable not found for request: Latest(nope)"}


def test_raising_handler_is_500_and_the_server_keeps_serving(pair_server: TfsServer) -> None:
    reply = pair_server.invoke("x", "application/x-raise")
    assert (reply.status, reply.json()) == (500, {"error": "refused by input_handler"})
    wrong = pair_server.invoke('{"instances": [[1, 2, 3]]}', Accept="application/x-tuple3")
    assert (wrong.status, wrong.json()) == (500, {"error": "too many values to unpack (expected 2)"})
    assert pair_server.invoke('{"instances": [[1, 2, 3]]}').status == 200
    assert "ignoring requirements.txt" in pair_server.log()


def test_handler_wins_over_the_pair_and_a_lone_input_handler_is_refused(tmp_path: Path) -> None:
    (tmp_path / "inference.py").write_text(
        "def handler(data, context):\n    return b'h', 'text/plain'\n"
        "def input_handler(data, context):\n    return data\n"
        "def output_handler(data, context):\n    return data, 'x'\n"
    )
    handler = load_handler(tmp_path)
    assert handler(None, None) == (b"h", "text/plain")
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "inference.py").write_text("def input_handler(data, context):\n    return data\n")
    with pytest.raises(HandlerImportError, match="Handlers are not implemented correctly"):
        load_handler(lone)


def test_handler_import_error_stops_the_server_with_one_line(saved_models: Path, tmp_path: Path) -> None:
    root = model_dir(
        tmp_path / "broken",
        saved_models,
        ("half",),
        {"inference.py": "import nowhere_to_be_found\ndef handler(d, c):\n    pass\n"},
    )
    proc = subprocess.run(
        [sys.executable, "-m", "smkit.serving", "--model", str(root), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1
    assert "import failed: ModuleNotFoundError: No module named 'nowhere_to_be_found'" in proc.stderr
    shutil.rmtree(root)
