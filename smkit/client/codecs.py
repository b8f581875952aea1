"""Codec tables over the SageMaker SDK's own serializers and deserializers (sagemaker-core 2.27,
``sagemaker.core.serializers`` / ``sagemaker.core.deserializers``; docs/toolchain.md).

The request is serialized by its Content-Type; the response is deserialized by the Content-Type the
endpoint answered with (not by the request's Accept, which a model may not honour).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

from sagemaker.core.deserializers import (
    BaseDeserializer,
    BytesDeserializer,
    CSVDeserializer,
    JSONDeserializer,
    JSONLinesDeserializer,
    NumpyDeserializer,
    StringDeserializer,
)
from sagemaker.core.serializers import (
    BaseSerializer,
    CSVSerializer,
    IdentitySerializer,
    JSONLinesSerializer,
    JSONSerializer,
    NumpySerializer,
)

from smkit.contract import media_type

JSON_LINES_TYPES = ("application/jsonlines", "application/x-jsonlines", "application/json-lines")

# Request side: serializer by Content-Type, and how a command-line literal becomes the serializer's input.
SERIALIZERS: dict[str, Callable[[str], BaseSerializer]] = {
    "text/csv": lambda ct: CSVSerializer(content_type=ct),
    "application/json": lambda ct: JSONSerializer(content_type=ct),
    "application/x-npy": lambda ct: NumpySerializer(content_type=ct),
    **{t: (lambda ct: JSONLinesSerializer(content_type=ct)) for t in JSON_LINES_TYPES},
}
LITERALS: dict[str, Callable[[str], Any]] = {
    "application/json": json.loads,
    "application/x-npy": json.loads,  # a JSON array literal becomes an .npy array
}

# Response side: deserializer by the response's Content-Type (parameters such as charset ignored).
DESERIALIZERS: dict[str, Callable[[], BaseDeserializer]] = {
    "application/json": JSONDeserializer,
    "text/csv": CSVDeserializer,
    "application/x-npy": lambda: NumpyDeserializer(allow_pickle=False),
    **{t: JSONLinesDeserializer for t in JSON_LINES_TYPES},
    "text/plain": StringDeserializer,
}


def serializer_for(content_type: str) -> BaseSerializer:
    """The SDK serializer for a request Content-Type (IdentitySerializer for other types)."""
    factory = SERIALIZERS.get(media_type(content_type))
    return factory(content_type) if factory else IdentitySerializer(content_type=content_type)


def serialize(data: Any, content_type: str) -> bytes:
    """Serialize ``data`` for ``content_type``: bytes and files pass as they are (already encoded), Python
    objects (lists, dicts, numpy arrays) go through the SDK serializer."""
    if isinstance(data, bytes | bytearray):
        data = io.BytesIO(bytes(data))
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
    """Deserialize a response by its Content-Type with the SDK deserializer (bytes for unknown types)."""
    factory = DESERIALIZERS.get(media_type(content_type))
    deserializer = factory() if factory else BytesDeserializer()
    return deserializer.deserialize(io.BytesIO(body), content_type or "application/octet-stream")


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
