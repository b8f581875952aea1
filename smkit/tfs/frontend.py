"""The Python front end of the SageMaker TensorFlow Serving container, for models with ``code/inference.py``.

``inference.py`` defines ``handler(data, context)``, or ``input_handler(data, context)`` and
``output_handler(response, context)``: ``handler`` wins when both forms are present; with the pair, the
input handler's result is POSTed to ``context.rest_uri`` with ``requests`` and the ``requests.Response`` goes
to the output handler. ``data`` is the request body as a stream, ``context`` the container's ``Context``
namedtuple, and the handler returns ``(body, content_type)``. A handler that raises gives 500
``{"error": "<str(exception)>"}``. The custom attributes ``tfs-model-name``, ``tfs-model-version`` and
``tfs-method`` choose the model, version and method in ``context.rest_uri``. Source:
aws/sagemaker-tensorflow-serving-container, ``docker/build_artifacts/sagemaker/python_service.py`` and
``tfs_utils.py`` (https://github.com/aws/sagemaker-tensorflow-serving-container); the hooks are
documented at https://sagemaker.readthedocs.io/en/stable/frameworks/tensorflow/using_tf.html.
"""

from __future__ import annotations

import importlib.util
import io
import json
import logging
import re
import sys
from collections import namedtuple
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from smkit import contract
from smkit.tfs.rest import Answer

log = logging.getLogger("smkit.tfs")

CUSTOM_ATTRIBUTES = contract.CUSTOM_ATTRIBUTES.lower()
DEFAULT_CONTENT_TYPE = "application/json"
DEFAULT_ACCEPT = "application/json"
ATTRIBUTE = re.compile(r"(tfs-[a-z\-]+=[^,]+)")

Context = namedtuple(
    "Context",
    "model_name, model_version, method, rest_uri, grpc_port, channel, "
    "custom_attributes, request_content_type, accept_header, content_length",
)
Handler = Callable[[Any, Any], Any]


class HandlerImportError(RuntimeError):
    """``inference.py`` cannot be imported or defines no usable handler."""


def load_handler(code_dir: Path, entry_point: str = "inference.py") -> Handler:
    """Import ``code_dir/entry_point`` as module ``inference`` and build the request handler from it."""
    path = code_dir / entry_point
    spec = importlib.util.spec_from_file_location("inference", path)
    if spec is None or spec.loader is None:
        raise HandlerImportError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules["inference"] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise HandlerImportError(f"{path}: import failed: {type(exc).__name__}: {exc}") from exc
    if hasattr(module, "handler"):
        return module.handler
    if hasattr(module, "input_handler") and hasattr(module, "output_handler"):
        return pair_handler(module.input_handler, module.output_handler)
    raise HandlerImportError(
        f"{path}: Handlers are not implemented correctly in user script: define handler(data, context), "
        "or both input_handler(data, context) and output_handler(response, context)"
    )


def pair_handler(input_handler: Handler, output_handler: Handler) -> Handler:
    """The container's handler for an input/output pair: POST the input handler's result to TF Serving."""
    import requests

    def handler(data: Any, context: Any) -> Any:
        processed = input_handler(data, context)
        response = requests.post(context.rest_uri, data=processed)
        return output_handler(response, context)

    return handler


def parse_attributes(header: str | None) -> dict[str, str]:
    """``tfs-*=value`` pairs of ``X-Amzn-SageMaker-Custom-Attributes``."""
    if not header:
        return {}
    return dict(pair.split("=") for pair in ATTRIBUTE.findall(header))


def rest_uri(port: int, attributes: Mapping[str, str], default_model: str) -> str:
    """``http://localhost:{port}/v1/models/{name}[/versions/{v}]:{method}``."""
    uri = f"http://localhost:{port}/v1/models/{attributes.get('tfs-model-name', default_model)}"
    if attributes.get("tfs-model-version"):
        uri += "/versions/" + attributes["tfs-model-version"]
    return uri + ":" + attributes.get("tfs-method", "predict")


def make_context(headers: Mapping[str, str], rest_port: int, grpc_port: int, default_model: str) -> Any:
    """The ``Context`` of one request (``tfs_utils.parse_request``)."""
    attributes = parse_attributes(headers.get(CUSTOM_ATTRIBUTES))
    length = headers.get("content-length")
    return Context(
        attributes.get("tfs-model-name"),
        attributes.get("tfs-model-version"),
        attributes.get("tfs-method"),
        rest_uri(rest_port, attributes, default_model),
        str(grpc_port),
        None,
        headers.get(CUSTOM_ATTRIBUTES),
        headers.get("content-type") or DEFAULT_CONTENT_TYPE,
        headers.get("accept") or DEFAULT_ACCEPT,
        int(length) if length and length.isdigit() else None,
    )


def _error(exc: BaseException) -> Answer:
    return Answer(500, json.dumps({"error": str(exc)}).encode("utf-8"))


def invoke(
    handler: Handler, headers: Mapping[str, str], body: bytes, ports: tuple[int, int], default: str
) -> Answer:
    """Run the handler for one request; the container's status and body for whatever it returns or raises."""
    try:
        context = make_context(headers, ports[0], ports[1], default)
    except ValueError as exc:
        log.exception("bad custom attributes")
        return _error(exc)
    try:
        result = handler(io.BytesIO(body), context)
        payload, content_type = result
    except Exception as exc:  # noqa: BLE001 - the container turns every handler error into a 500
        log.exception("exception handling request: %s", exc)
        return _error(exc)
    if isinstance(payload, str):
        payload = payload.encode("utf-8")
    elif isinstance(payload, bytearray | memoryview):
        payload = bytes(payload)
    elif not isinstance(payload, bytes):
        return _error(
            TypeError(f"the handler returned a body of type {type(payload).__name__}; return bytes or str")
        )
    return Answer(200, payload, content_type or DEFAULT_CONTENT_TYPE)
