"""TF Serving form pieces that need no TensorFlow: number and error formats, nginx's conversions, layout."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import numpy as np
import pytest

from smkit.process import free_port
from smkit.tfs import rest_conversion
from smkit.tfs.container import StartError, rest_listener
from smkit.tfs.jsonfmt import c_escape, decimal, error_body, json_value_text
from smkit.tfs.layout import find_models, handler_form, inspect_layout
from smkit.tfs.select import use_tfs


@pytest.mark.parametrize(
    ("value", "single", "text"),
    [
        (2.5, True, "2.5"),
        (3.0, True, "3.0"),
        (float(np.float32(1236.567)), True, "1236.56702"),
        (0.1, False, "0.1"),
        (9000000.0, True, "9e+06"),
        (1e-05, True, "1e-05"),
        (float("nan"), True, "NaN"),
        (float("-inf"), False, "-Infinity"),
        (1 / 3, False, "0.33333333333333331"),
    ],
)
def test_decimal_as_tf_serving_writes_it(value: float, single: bool, text: str) -> None:
    assert decimal(value, single=single) == text


def test_error_body_is_c_escaped() -> None:
    assert c_escape("a'b\"c\n\\ é\x01") == "a\\'b\\\"c\\n\\\\ \\303\\251\\001"
    assert error_body("Missing 'inputs'") == b'{ "error": "Missing \\\'inputs\\\'" }'
    assert json_value_text({"a": [1, 2.5]}) == '{\n    "a": [\n        1,\n        2.5\n    ]\n}'


@pytest.mark.parametrize(
    ("content_type", "body", "converted"),
    [
        ("application/json", '{"instances": [1]}', '{"instances": [1]}'),
        ("application/json", '{"inputs": {"x": 1}}', '{"inputs": {"x": 1}}'),
        ("application/json", "[1, 2]", '{"instances":[[1, 2]]}'),
        ("application/json", "[[1, 2], [3, 4]]", '{"instances":[[1, 2], [3, 4]]}'),
        ("application/json", '{"x": 1}', '{"instances":[{"x": 1}]}'),
        ("application/jsonlines", '{"x": 1}\n{"x": 2}\n', '{"instances":[{"x": 1},{"x": 2}]}'),
        ("application/jsons", "[1]\n[2]", '{"instances":[[1],[2]]}'),
        ("text/csv", "1,2\n3,4\n", '{"instances":[[1,2],[3,4]]}'),
        ("text/csv", "5\n6", '{"instances":[5,6]}'),
        ("text/csv", "a,b\n", '{"instances":[["a","b"]]}'),
        # Only the first comma of a quoted line is split, as in the container's nginx script.
        ("text/csv", "a,b,c", '{"instances":[["a","b,c"]]}'),
        ("text/plain", "1", None),
        (None, "1", None),
    ],
)
def test_nginx_conversions(content_type: str | None, body: str, converted: str | None) -> None:
    assert rest_conversion.convert(content_type, body) == converted


def test_nginx_attributes_and_uri() -> None:
    attributes = rest_conversion.js_attributes(
        "tfs-model-name=a,tfs-model-version=2,tfs-method=regress,x=y", "d"
    )
    assert rest_conversion.tfs_path(attributes, True) == "/v1/models/a/versions/2:regress"
    assert rest_conversion.tfs_path(rest_conversion.js_attributes(None, "d"), False) == "/v1/models/d"


def _touch(path: Path, text: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_layout_finds_models_versions_and_the_root_model(tmp_path: Path) -> None:
    _touch(tmp_path / "b" / "001" / "saved_model.pb")
    _touch(tmp_path / "b" / "10" / "saved_model.pb")
    _touch(tmp_path / "a" / "1" / "saved_model.pb")
    _touch(tmp_path / "notes" / "saved_model.pb")
    _touch(tmp_path / "code" / "x" / "1" / "saved_model.pb")
    assert [(m.name, m.versions) for m in find_models(tmp_path)] == [("a", (1,)), ("b", (1, 10))]
    root = tmp_path / "root"
    _touch(root / "1" / "saved_model.pb")
    assert [m.name for m in find_models(root)] == ["model"]


def test_form_detection_on_directories_and_archives(tmp_path: Path) -> None:
    assert handler_form("def handler(data, context):\n    pass\n") == "tf-serving"
    assert handler_form("from helpers import input_handler, output_handler\n") == "tf-serving"
    assert handler_form("def model_fn(d):\n    pass\n") == "toolkit"
    model = tmp_path / "model"
    _touch(model / "m" / "1" / "saved_model.pb")
    assert inspect_layout(model).is_tfs  # no inference.py: the image's defaults
    _touch(model / "code" / "inference.py", "def model_fn(d):\n    pass\n")
    assert not inspect_layout(model).is_tfs
    _touch(model / "code" / "inference.py", "def handler(data, context):\n    pass\n")
    archive = tmp_path / "model.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(model, arcname=".")
    assert inspect_layout(archive).is_tfs
    assert use_tfs("auto", str(archive), {})
    assert not use_tfs("toolkit", str(archive), {})
    assert use_tfs("tfs", str(tmp_path / "anything"), {})
    assert not use_tfs("auto", str(tmp_path / "missing"), {})
    with pytest.raises(ValueError, match="serving mode 'tf'"):
        use_tfs("tf", None, {})
    assert json.loads(json.dumps(handler_form("x = (")) or "null") is None


def test_rest_port_is_8501_or_another_free_one_and_the_safe_range_is_honoured() -> None:
    first, first_ports = rest_listener(8080, {})
    second, second_ports = rest_listener(8080, {})
    try:
        assert first_ports.rest != second_ports.rest
        assert second_ports.rest != 8501  # taken by the first (or by someone else before)
        assert second.getsockname()[1] == second_ports.rest
    finally:
        first.close()
        second.close()
    low = free_port(count=2)
    sock, ports = rest_listener(8080, {"SAGEMAKER_SAFE_PORT_RANGE": f"{low}-{low + 10}"})
    sock.close()
    assert (ports.grpc, ports.rest) == (low, low + 1)
    with pytest.raises(StartError, match="SAGEMAKER_SAFE_PORT_RANGE='9000' is not LOW-HIGH"):
        rest_listener(8080, {"SAGEMAKER_SAFE_PORT_RANGE": "9000"})


def test_port_0_is_a_free_port_not_the_containers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--port 0`` binds a port the system picks, as ``smkit serve`` does, even while the container port
    (``SAGEMAKER_BIND_TO_PORT``, default 8080) is taken, e.g. by a local endpoint."""
    import socket

    from smkit.tfs.container import serve

    with socket.create_server(("127.0.0.1", 0)) as taken:
        environ = {"SAGEMAKER_BIND_TO_PORT": str(taken.getsockname()[1])}
        assert serve(str(tmp_path), port=0, environ=environ) == 1
    stderr = capsys.readouterr().err
    assert "cannot listen" not in stderr
    assert "no SavedModel bundles found" in stderr  # it got past binding, to the (empty) model folder
