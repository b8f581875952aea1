"""Codec tables over the SageMaker SDK's own serializers and deserializers (sagemaker-core 2.27,
``sagemaker.core.serializers`` / ``sagemaker.core.deserializers``; docs/toolchain.md).

The request is serialized by its Content-Type; the response is deserialized by the Content-Type the
endpoint answered with (not by the request's Accept, which a model may not honour).

Importing the SDK costs seconds (it loads all of ``sagemaker.core``), so the codecs whose SDK class is a
one-line call of the standard library (JSON, text, bytes; encoded bytes passing through) run that call
here, with the SDK's exact output (tests/client/test_client_codecs.py compares them); the others (CSV
answers, NPY, JSON Lines, Python objects as CSV) import the SDK when they are used.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from typing import Any

from smkit.contract import media_type

JSON_LINES_TYPES = ("application/jsonlines", "application/x-jsonlines", "application/json-lines")


def _without_arrays(value: Any) -> Any:
    """What JSONSerializer does to a NumPy array (``tolist``); no array exists unless NumPy is loaded."""
    numpy = sys.modules.get("numpy")
    return value.tolist() if numpy is not None and isinstance(value, numpy.ndarray) else value


def _json_dumps(data: Any) -> str:
    """``sagemaker.core.serializers.JSONSerializer.serialize`` for Python objects."""
    if isinstance(data, dict):
        return json.dumps({key: _without_arrays(value) for key, value in data.items()})
    return json.dumps(_without_arrays(data))


def _sdk_serializer(name: str) -> Callable[[str], Any]:
    def build(content_type: str) -> Any:
        from sagemaker.core import serializers

        return getattr(serializers, name)(content_type=content_type)

    return build


def _sdk_deserializer(name: str, **kwargs: Any) -> Callable[[bytes, str], Any]:
    def run(body: bytes, content_type: str) -> Any:
        from sagemaker.core import deserializers

        return getattr(deserializers, name)(**kwargs).deserialize(io.BytesIO(body), content_type)

    return run


# Request side: how a Python object becomes a body, by Content-Type (the SDK's serializer, or its
# standard-library equivalent).
SERIALIZERS: dict[str, Callable[[str], Any]] = {
    "text/csv": _sdk_serializer("CSVSerializer"),
    "application/x-npy": _sdk_serializer("NumpySerializer"),
    **{t: _sdk_serializer("JSONLinesSerializer") for t in JSON_LINES_TYPES},
}
BUILTIN_SERIALIZERS: dict[str, Callable[[Any], str]] = {"application/json": _json_dumps}
# How a command-line literal becomes the serializer's input.
LITERALS: dict[str, Callable[[str], Any]] = {
    "application/json": json.loads,
    "application/x-npy": json.loads,  # a JSON array literal becomes an .npy array
}

# Response side: deserializer by the response's Content-Type (parameters such as charset ignored).
# JSONDeserializer is json.load of the UTF-8 text, StringDeserializer decodes UTF-8, BytesDeserializer
# returns the bytes.
DESERIALIZERS: dict[str, Callable[[bytes, str], Any]] = {
    "application/json": lambda body, _ct: json.loads(body.decode("utf-8")),
    "text/plain": lambda body, _ct: body.decode("utf-8"),
    "text/csv": _sdk_deserializer("CSVDeserializer"),
    "application/x-npy": _sdk_deserializer("NumpyDeserializer", allow_pickle=False),
    **{t: _sdk_deserializer("JSONLinesDeserializer") for t in JSON_LINES_TYPES},
}


def serializer_for(content_type: str) -> Any:
    """The SDK serializer for a request Content-Type (IdentitySerializer for other types); imports the SDK."""
    key = media_type(content_type)
    if key in BUILTIN_SERIALIZERS:
        return _sdk_serializer("JSONSerializer")(content_type)
    factory = SERIALIZERS.get(key)
    return factory(content_type) if factory else _sdk_serializer("IdentitySerializer")(content_type)


def serialize(data: Any, content_type: str) -> bytes:
    """Serialize ``data`` for ``content_type``: bytes and files pass as they are (already encoded, as every
    SDK serializer passes a file), Python objects (lists, dicts, numpy arrays) go through the serializer."""
    if isinstance(data, bytes | bytearray):
        return bytes(data)
    if hasattr(data, "read"):
        out = data.read()
    elif (builtin := BUILTIN_SERIALIZERS.get(media_type(content_type))) is not None:
        out = builtin(data)
    else:
        out = serializer_for(content_type).serialize(data)
        if hasattr(out, "read"):
            out = out.read()
    return out.encode("utf-8") if isinstance(out, str) else bytes(out)


def serialize_literal(text: str, content_type: str) -> bytes:
    """Serialize a command-line literal (``--data '[[1, 2]]'``); JSON and NPY parse it as JSON first."""
    parse = LITERALS.get(media_type(content_type))
    if parse is None:
        return serialize(text.encode("utf-8"), content_type)
    try:
        value = parse(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"--data {text[:40]!r} is not valid JSON for Content-Type {content_type} ({exc.msg}); "
            "pass a JSON value or @FILE"
        ) from exc
    return serialize(value, content_type)


def deserialize(body: bytes, content_type: str | None) -> Any:
    """Deserialize a response by its Content-Type as the SDK deserializer does (bytes for unknown types)."""
    run = DESERIALIZERS.get(media_type(content_type))
    return run(body, content_type or "application/octet-stream") if run else bytes(body)


def to_jsonable(value: Any) -> Any:
    """Something ``json.dumps`` can print: arrays as lists, bytes as text when they are UTF-8."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return f"<{len(value)} bytes>"
    if isinstance(value, list):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    return value
