"""The SageMaker Runtime REST protocol: the parsed request (header names and limits: :mod:`smkit.contract`).

Header names and locations are those of the botocore ``sagemaker-runtime`` service model (2017-05-13):
InvokeEndpoint sends ``Content-Type``/``Accept`` as they are; InvokeEndpointWithResponseStream sends Accept as
``X-Amzn-SageMaker-Accept``; InvokeEndpointAsync sends them as
``X-Amzn-SageMaker-Content-Type``/``X-Amzn-SageMaker-Accept`` and answers 202 with ``InferenceId`` in the
JSON body and the output/failure locations in headers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from smkit.contract import (
    ASYNC_ACCEPT,
    ASYNC_CONTENT_TYPE,
    CUSTOM_ATTRIBUTES,
    INFERENCE_COMPONENT,
    INFERENCE_ID,
    SESSION_ID,
    TARGET_CONTAINER,
    TARGET_MODEL,
    TARGET_VARIANT,
)
from smkit.local.error_shapes import payload_too_large

if TYPE_CHECKING:
    from smkit.http1 import Request

_ASYNC_CONTENT_TYPE = ASYNC_CONTENT_TYPE.lower()
_ASYNC_ACCEPT = ASYNC_ACCEPT.lower()
_CUSTOM_ATTRIBUTES = CUSTOM_ATTRIBUTES.lower()
_TARGET_MODEL = TARGET_MODEL.lower()
_TARGET_VARIANT = TARGET_VARIANT.lower()
_TARGET_CONTAINER = TARGET_CONTAINER.lower()
_INFERENCE_ID = INFERENCE_ID.lower()
_INFERENCE_COMPONENT = INFERENCE_COMPONENT.lower()
_SESSION_ID = SESSION_ID.lower()


def _wire_names(asynchronous: bool, stream: bool) -> tuple[str, ...]:
    """The lower-case header names of Invocation's fields from ``content_type`` to ``session_id``, in order."""
    return (
        _ASYNC_CONTENT_TYPE if asynchronous else "content-type",
        _ASYNC_ACCEPT if asynchronous or stream else "accept",
        _CUSTOM_ATTRIBUTES,
        _TARGET_MODEL,
        _TARGET_VARIANT,
        _TARGET_CONTAINER,
        _INFERENCE_ID,
        _INFERENCE_COMPONENT,
        _SESSION_ID,
    )


# Field name (bytes) -> its index among Invocation's fields (body is 0), for InvokeEndpoint and
# InvokeEndpointWithResponseStream.
_INVOKE_SLOTS = {name.encode(): slot for slot, name in enumerate(_wire_names(False, False), start=1)}
_STREAM_SLOTS = {name.encode(): slot for slot, name in enumerate(_wire_names(False, True), start=1)}

# The account the local endpoint pretends to live in: moto's default account.
LOCAL_ACCOUNT = "123456789012"


def request_body(request: Request, limit: int) -> bytes:
    """The request body, or 413 when it is larger than ``limit`` (the server has read, or drained, it
    all, so the client sees the answer instead of a reset connection)."""
    if request.too_large is not None or request.size > limit:
        raise payload_too_large(limit)
    chunks = request.chunks
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


class Headers(dict[str, str]):
    """Header fields by lower-case name (the first of repeated fields, as a client library reads them);
    lookups ignore case."""

    __slots__ = ()

    @classmethod
    def of(cls, pairs: Sequence[tuple[bytes, bytes]]) -> Headers:
        """From ``(name, value)`` byte pairs whose names are already lower-case (as a parser gives them).

        Filled from the last pair to the first, so the first of repeated fields is the one kept.
        """
        headers = cls()
        for name, value in reversed(pairs):
            headers[name.decode("latin-1")] = value.decode("latin-1")  # dict's own __setitem__
        return headers

    def get(self, name: str, default: Any = None) -> Any:
        return dict.get(self, name.lower(), default)

    @property
    def lowered(self) -> Callable[[str], str | None]:
        """``dict.get`` of these headers, for names already in lower case (no case folding per lookup)."""
        return functools.partial(dict.get, self)

    def __getitem__(self, name: str) -> str:
        return dict.__getitem__(self, name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and dict.__contains__(self, name.lower())


@dataclass(slots=True)
class Invocation:
    """One inference request as the containers of a variant will see it (read, never changed: a copy is
    made with :func:`dataclasses.replace`). Not frozen: a frozen dataclass's ``__init__`` costs six times
    as much, and the gateway builds one per call it relays."""

    body: bytes
    content_type: str | None = None
    accept: str | None = None
    custom_attributes: str | None = None
    target_model: str | None = None
    target_variant: str | None = None
    target_container: str | None = None
    inference_id: str | None = None
    inference_component: str | None = None
    session_id: str | None = (
        None  # SessionId: NEW_SESSION or a live session's id (smkit/local/sticky_sessions.py)
    )
    stream: bool = False  # InvokeEndpointWithResponseStream: the container's answer is read as a stream

    @classmethod
    def from_headers(
        cls, headers: Headers, body: bytes, *, asynchronous: bool = False, stream: bool = False
    ) -> Invocation:
        """Read the InvokeEndpoint (InvokeEndpointAsync, InvokeEndpointWithResponseStream) headers.

        The asynchronous and streaming operations send Accept as ``X-Amzn-SageMaker-Accept``.
        """
        get = headers.lowered  # by lower-case name
        # The fields in their declared order, positionally (keyword arguments cost the generated __init__
        # more than all the lookups together).
        values: list[Any] = [body, *(get(name) for name in _wire_names(asynchronous, stream)), stream]
        return cls(*values)

    @classmethod
    def from_fields(
        cls, fields: Sequence[tuple[bytes, bytes]], body: bytes, *, stream: bool = False
    ) -> Invocation:
        """:meth:`from_headers` of InvokeEndpoint (InvokeEndpointWithResponseStream) read straight from the
        ``(name, value)`` byte pairs a parser gives (lower-case names): one pass that decodes only the
        fields it keeps, the first of repeated ones. The gateway reads every call it relays this way."""
        slots = _STREAM_SLOTS if stream else _INVOKE_SLOTS
        values: list[Any] = [body, None, None, None, None, None, None, None, None, None, stream]
        for name, value in fields:
            slot = slots.get(name)
            if slot is not None and values[slot] is None:
                values[slot] = value.decode("latin-1")
        return cls(*values)

    def container_headers(self, *, content_type: str | None, accept: str | None) -> dict[str, str]:
        """The headers that reach a container (docs/hosting-contract.md): Content-Type, Accept, custom attributes."""
        headers: dict[str, str] = {}
        if content_type:
            headers["Content-Type"] = content_type
        if accept:
            headers["Accept"] = accept
        if self.custom_attributes is not None:
            headers[CUSTOM_ATTRIBUTES] = self.custom_attributes
        if self.session_id is not None:
            headers[SESSION_ID] = self.session_id
        return headers
