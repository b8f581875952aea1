"""TensorFlow Serving's REST API over :class:`~smkit.tfs.saved_models.ModelStore`.

``GET /v1/models/{name}[/versions/{v}]`` (status), ``.../metadata``, ``POST /v1/models/{name}[/versions/{v}]
:predict|:classify|:regress``; ``/labels/{label}`` is parsed and refused as no labels are configured (as
under SageMaker). Paths are matched case-insensitively with TensorFlow Serving's own patterns
(tensorflow/serving ``model_servers/http_rest_api_util.cc``, https://github.com/tensorflow/serving); every
answer is ``application/json``, errors ``{ "error": "..." }`` with the status of the error's code.
Reference: https://www.tensorflow.org/tfx/serving/api_rest.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from smkit.tfs.examples import classify, regress, serialized_examples
from smkit.tfs.jsonfmt import error_body, json_value_text
from smkit.tfs.predictions import columnar_response, row_response
from smkit.tfs.saved_models import LoadedVersion, ModelStore, run
from smkit.tfs.status import TfsError, invalid
from smkit.tfs.tensors import from_inputs, from_instances, parse_request

PREDICTION = re.compile(
    r"/v1/models/([^/:]+)(?:(?:/versions/(\d+))|(?:/labels/([^/:]+)))?:(classify|regress|predict)", re.I
)
STATUS = re.compile(
    r"/v1/models(?:/([^/:]+))?(?:(?:/versions/(\d+))|(?:/labels/([^/:]+)))?(?:/(metadata))?", re.I
)
API = re.compile(r"/v1/.*", re.I)
JSON = "application/json"


@dataclass(frozen=True)
class Answer:
    """An HTTP answer of the REST API."""

    status: int
    body: bytes
    content_type: str = JSON


class RestApi:
    """The REST API's request handling, independent of the HTTP server in front of it."""

    def __init__(self, store: ModelStore) -> None:
        self.store = store

    def handle(self, method: str, path: str, body: bytes) -> Answer:
        """Answer one request (blocking: runs the model)."""
        if not API.fullmatch(path):
            return Answer(404, b"")
        try:
            text = self._dispatch(method.upper(), path, body)
        except TfsError as exc:
            return Answer(exc.http_status, error_body(exc.message))
        return Answer(200, text.encode("utf-8", "surrogateescape"))

    def _dispatch(self, method: str, path: str, body: bytes) -> str:
        if method == "POST" and (match := PREDICTION.fullmatch(path)):
            name, version, label, verb = match.groups()
            return self._call(
                verb.lower(), body, lambda: self.store.get(unquote(name), _version(version), _label(label))
            )
        if method == "GET" and (match := STATUS.fullmatch(path)):
            name, version, label, metadata = match.groups()
            if metadata:
                loaded = self.store.get(unquote(name or ""), _version(version), _label(label))
                return metadata_json(loaded)
            if not name:
                raise invalid("Missing model name in request.")
            if label is not None:
                raise invalid(f"Unrecognized servable version label: {unquote(label)}")
            return status_json(self.store.status(unquote(name), _version(version)))
        raise invalid(f"Malformed request: {method} {path}")

    def _call(self, verb: str, body: bytes, servable: Callable[[], LoadedVersion]) -> str:
        # As TensorFlow Serving: the request is parsed before the model is looked up.
        doc = parse_request(body)
        name = doc.get("signature_name", "")
        if not isinstance(name, str):
            raise invalid(
                f"JSON Value: {json_value_text(doc)} not formatted correctly. 'signature_name' key must be a "
                "string value."
            )
        if verb in ("classify", "regress"):
            examples = serialized_examples(doc, verb)
            return (classify if verb == "classify" else regress)(servable(), name, examples)
        signature = servable().signature(name)
        if not signature.inputs:
            raise invalid(f"Failed to get input map for signature: {name or 'DEFAULT'}")
        if "instances" in doc:
            if "inputs" in doc:
                raise invalid(
                    f"JSON Value: {json_value_text(doc)} Not formatted correctly expecting only one of "
                    "'inputs' or 'instances' keys to exist "
                )
            instances = doc["instances"]
            if not isinstance(instances, list):
                raise invalid(f"JSON Value: {json_value_text(doc)} Excepting 'instances' to be an list/array")
            if not instances:
                raise invalid(f"JSON Value: {json_value_text(doc)} No values in 'instances' array")
            return row_response(run(signature, from_instances(instances, signature.inputs)))
        if "inputs" in doc:
            return columnar_response(run(signature, from_inputs(doc["inputs"], signature.inputs)))
        raise invalid("Missing 'inputs' or 'instances' key")


def _version(text: str | None) -> int | None:
    return int(text) if text else None


def _label(text: str | None) -> str | None:
    return unquote(text) if text else None


def status_json(versions: list[Any]) -> str:
    """``GetModelStatusResponse`` as protobuf's JSON printer writes it (whitespace on, defaults printed)."""
    doc = {
        "model_version_status": [
            {
                "version": str(v.version),
                "state": "AVAILABLE",
                "status": {"error_code": "OK", "error_message": ""},
            }
            for v in versions
        ]
    }
    return json.dumps(doc, indent=1) + "\n"


def metadata_json(loaded: Any) -> str:
    """``GetModelMetadataResponse`` the way TensorFlow Serving stitches it together."""
    spec = {"name": loaded.name, "signature_name": "", "version": str(loaded.version)}
    signature_defs = json.dumps({"signature_def": loaded.signature_defs}, indent=1)
    return (
        "{\n"
        f'"model_spec":{json.dumps(spec, indent=1)}\n,\n'
        f'"metadata": {{"signature_def": {signature_defs}\n}}\n'
        "}\n"
    )
