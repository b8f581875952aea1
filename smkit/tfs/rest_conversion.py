"""The container without ``code/inference.py``: nginx's own request conversion in front of the REST API.

The SageMaker TensorFlow Serving container then answers ``/invocations`` and ``/ping`` in nginx
(``tensorflowServing.js``): ``application/json`` (also ``application/jsonlines``, ``application/jsons``)
is passed through when it already holds ``instances``, ``inputs`` or ``examples``, JSON Lines and bare
JSON values are wrapped into ``{"instances": [...]}``, ``text/csv`` rows become instances, anything else
is 415. The REST API's status and body come back unchanged, except that a JSON ``Accept`` strips the
newlines and sets that content type. ``/ping`` is 200 while the model's status says ``AVAILABLE``, else
502. The conversions are reproduced as written, quirks included (only the first ``,`` and ``"`` of a
quoted CSV line are handled). Source: aws/sagemaker-tensorflow-serving-container,
``docker/build_artifacts/sagemaker/tensorflowServing.js``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from smkit.tfs.frontend import CUSTOM_ATTRIBUTES
from smkit.tfs.rest import Answer, RestApi

JSON_TYPES = ("application/json", "application/jsonlines", "application/jsons")
CSV = "text/csv"
KV = re.compile(r"tfs-[a-z\-]+=[^,]+")


def js_attributes(header: str | None, default_model: str) -> dict[str, str]:
    """``parse_custom_attributes``: ``tfs-*=value`` pairs; pairs with a second ``=`` are ignored."""
    attributes: dict[str, str] = {}
    for match in KV.findall(header or ""):
        parts = match.split("=")
        if len(parts) == 2:
            attributes[parts[0]] = parts[1]
    attributes.setdefault("tfs-model-name", default_model)
    return attributes


def tfs_path(attributes: Mapping[str, str], with_method: bool) -> str:
    """``make_tfs_uri`` without nginx's ``/tfs`` prefix."""
    path = "/v1/models/" + attributes["tfs-model-name"]
    if "tfs-model-version" in attributes:
        path += "/versions/" + attributes["tfs-model-version"]
    if with_method:
        path += ":" + (attributes.get("tfs-method") or "predict")
    return path


def is_tfs_json(data: str) -> bool:
    """Already a TensorFlow Serving request."""
    return re.search(r'"(instances|inputs|examples)"\s*:', data) is not None


def is_json_lines(data: str) -> bool:
    """Objects or arrays separated only by whitespace."""
    return re.search(r"[}\]]\s*[\[{]", data) is not None


def json_lines_request(data: str) -> str:
    """Each line one instance."""
    lines = re.split(r"\r?\n", data.strip())
    parts = ['{"instances":']
    if len(lines) != 1:
        parts.append("[")
    for i, raw in enumerate(lines):
        line = raw.strip()
        if line:
            parts.append(("" if i == 0 else ",") + line)
    parts.append("}" if len(lines) == 1 else "]}")
    return "".join(parts)


def generic_json_request(data: str) -> str:
    """A bare value or list becomes one instance; a list of lists is the list of instances."""
    if not re.match(r"\s*\[\s*\[", data):
        data = "[" + data + "]"
    return '{"instances":' + data + "}"


def csv_request(data: str) -> str:
    """One instance per non-empty line; non-numeric first fields are quoted (first comma only, as nginx does)."""
    needs_quotes = re.match(r"\s*(\"|[\d.Ee+\-]+.*)", data) is None
    lines = re.split(r"\r?\n", data.strip())
    parts = ['{"instances":[']
    for i, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        multiple = "," in line
        item = line.replace('"', '\\"', 1).replace(",", '","', 1) if needs_quotes else line
        if needs_quotes:
            item = '"' + item + '"'
        parts.append("[" + item + "]" if multiple else item)
        if i != len(lines) - 1:
            parts.append(",")
    parts.append("]}")
    return "".join(parts)


def convert(content_type: str | None, data: str) -> str | None:
    """The REST request nginx would send, or None for an unsupported content type."""
    if content_type in JSON_TYPES:
        if is_tfs_json(data):
            return data
        if is_json_lines(data):
            return json_lines_request(data)
        return generic_json_request(data)
    if content_type == CSV:
        return csv_request(data)
    return None


def shape_reply(answer: Answer, accept: str | None) -> Answer:
    """``tfs_json_request``'s callback: un-escape ``'instances'`` in a 400, honour a JSON ``Accept``."""
    body = answer.body.decode("utf-8", "surrogateescape")
    content_type = "application/json"
    if answer.status == 400:
        body = body.replace("\\'instances\\'", "'instances'", 1)
    if accept is not None:
        types = accept.strip().replace(" ", "", 1).split(",")
        if "application/jsonlines" in types or "application/json" in types:
            body = body.replace("\n", "")
            content_type = types[0]
    return Answer(answer.status, body.encode("utf-8", "surrogateescape"), content_type)


def invoke(rest: RestApi, headers: Mapping[str, str], body: bytes, default_model: str) -> Answer:
    """``POST /invocations`` without a Python handler."""
    content_type = headers.get("content-type")
    converted = convert(content_type, body.decode("utf-8", "surrogateescape"))
    if converted is None:
        message = f'{{"error": "Unsupported Media Type: {content_type or "Unknown"}"}}'
        return Answer(415, message.encode())
    attributes = js_attributes(headers.get(CUSTOM_ATTRIBUTES), default_model)
    reply = rest.handle("POST", tfs_path(attributes, True), converted.encode("utf-8", "surrogateescape"))
    return shape_reply(reply, headers.get("accept"))


def ping(rest: RestApi, headers: Mapping[str, str], default_model: str) -> Answer:
    """``GET /ping``: 200 while the model's status is ``AVAILABLE``, else 502."""
    attributes = js_attributes(headers.get(CUSTOM_ATTRIBUTES), default_model)
    reply = rest.handle("GET", tfs_path(attributes, False), b"")
    ok = reply.status == 200 and b'"AVAILABLE"' in reply.body
    return Answer(200 if ok else 502, b"")
