"""What a handler meets, compared with the official toolkit's own code paths, over a real server.

The toolkit decodes ``application/x-npz`` with ``scipy.sparse.load_npz(BytesIO(body))``
(src/sagemaker_inference/decoder.py, ``_npz_to_sparse``) and wraps an exception that is not its own in
``GenericInferenceToolkitError(500, str(e))``, whose empty message becomes "Invalid Request"
(src/sagemaker_inference/errors.py, transformer.py): https://github.com/aws/sagemaker-inference-toolkit.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import scipy.sparse
from serving_harness import Server, start_server
from serving_models import write_model

from smkit.serving.wire.errors import InferenceError
from smkit.serving.worker import codecs

HANDLER = """
class ToolkitStyleError(Exception):
    # as sagemaker_inference.errors.BaseInferenceToolkitError(status_code, message, phrase)
    def __init__(self, status_code, message, phrase):
        self.status_code = status_code
        self.message = message
        self.phrase = phrase
        super().__init__(status_code, message, phrase)


def model_fn(model_dir):
    return None


def predict_fn(data, model, context):
    kind = context.get_request_header(0, "X-Raise")
    if kind == "runtime":
        raise RuntimeError()
    if kind == "key":
        raise KeyError()
    if kind == "toolkit":
        raise ToolkitStyleError(400, "", "Bad Feature Vector")
    return {
        "class": type(data).__module__ + "." + type(data).__qualname__,
        "format": data.format,
        "shape": list(data.shape),
        "dtype": str(data.dtype),
        "dense": data.toarray().tolist(),
    }
"""


def describe(matrix: Any) -> dict[str, Any]:
    """What the handler above reports, computed on the toolkit decoder's result."""
    return {
        "class": type(matrix).__module__ + "." + type(matrix).__qualname__,
        "format": matrix.format,
        "shape": list(matrix.shape),
        "dtype": str(matrix.dtype),
        "dense": matrix.toarray().tolist(),
    }


def toolkit_decode(body: bytes) -> Any:
    """The toolkit's ``_npz_to_sparse``."""
    return scipy.sparse.load_npz(io.BytesIO(body))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("fidelity")
    started = start_server(root, ["--model", str(write_model(root, "fidelity", HANDLER)), "--workers", "1"])
    yield started
    started.stop()


def sparse_bodies() -> list[tuple[str, bytes]]:
    rng = np.random.default_rng(7)
    dense = rng.random((5, 7)) * (rng.random((5, 7)) > 0.6)
    cases = {
        "csr_matrix float64": scipy.sparse.csr_matrix(dense),
        "csc_matrix float32": scipy.sparse.csc_matrix(dense.astype(np.float32)),
        "coo_matrix int64": scipy.sparse.coo_matrix((dense * 10).astype(np.int64)),
        "bsr_matrix": scipy.sparse.bsr_matrix(dense[:4, :6], blocksize=(2, 2)),
        "dia_matrix": scipy.sparse.dia_matrix(np.eye(4)),
        "csr_array bool": scipy.sparse.csr_array(dense > 0.5),
        "empty csr_matrix": scipy.sparse.csr_matrix((3, 4)),
    }
    bodies = []
    for name, matrix in cases.items():
        for compressed in (True, False):
            stream = io.BytesIO()
            scipy.sparse.save_npz(stream, matrix, compressed=compressed)
            bodies.append((f"{name} compressed={compressed}", stream.getvalue()))
    return bodies


def test_sparse_npz_body_decodes_to_what_the_toolkit_decoder_gives(server: Server) -> None:
    for name, body in sparse_bodies():
        answer = server.invoke(body, "application/x-npz", "application/json")
        assert answer.status == 200, (name, answer.body)
        assert answer.json() == describe(toolkit_decode(body)), name


@pytest.mark.parametrize(
    ("kind", "status", "message"),
    [
        ("runtime", 500, "Invalid Request"),
        ("key", 500, "Invalid Request"),
        ("toolkit", 400, "Bad Feature Vector"),
    ],
)
def test_exception_with_an_empty_message_is_reported_as_the_toolkit_does(
    server: Server, kind: str, status: int, message: str
) -> None:
    stream = io.BytesIO()
    scipy.sparse.save_npz(stream, scipy.sparse.csr_matrix(np.eye(2)))
    answer = server.request(
        "POST",
        "/invocations",
        stream.getvalue(),
        {"Content-Type": "application/x-npz", "X-Raise": kind},
    )
    assert answer.status == status
    assert answer.json()["message"] == message
    assert server.invoke(stream.getvalue(), "application/x-npz").status == 200  # still serving


def test_sparse_npz_without_scipy_names_the_missing_package(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.BytesIO()
    scipy.sparse.save_npz(stream, scipy.sparse.csr_matrix(np.eye(2)))
    monkeypatch.setitem(sys.modules, "scipy.sparse", None)  # as in a model environment without SciPy
    monkeypatch.setitem(sys.modules, "scipy", None)
    with pytest.raises(InferenceError, match="scipy is not installed in the model's environment") as raised:
        codecs.decode(stream.getvalue(), "application/x-npz")
    assert raised.value.status_code == 500
