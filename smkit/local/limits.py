"""Bounded request heads for the local gateway: AWS's HTTP header limits, answered in the service's shape.

The bounds are the kit's one implementation, :mod:`smkit.http1.limits`: request line 16 KiB, a single
header 16 KiB, the entire request header 64 KiB, as AWS documents them for its HTTP front doors
(https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-limits.html#http-headers-quotas,
https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-troubleshooting.html#http-400-issues),
plus at most 100 header fields (none documented by AWS; gunicorn's and the container front end's bound).
SageMaker Runtime documents no limits of its own (docs/request-security.md).

The refusal (:func:`service_refusal`, the ``refusal`` of :class:`smkit.http1.Server`) is 400 in the
service's error shape without an error type, as the front door (not the service) answers: a JSON
``message`` naming the field, its size, the limit and the fix, and an ``x-amzn-RequestId``; botocore
reports the status as the code. The connection is closed; the gateway keeps serving others.
:class:`BoundedHttpToolsProtocol` applies the same bounds and shape to a gateway served by uvicorn.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from smkit.http1 import ALB_LIMITS, HEAD_TOO_LARGE, HeadBounds, HeadTooLarge, response_head

MAX_REQUEST_LINE = ALB_LIMITS.request_line
MAX_HEADER_FIELD = ALB_LIMITS.header_field
MAX_REQUEST_HEADERS = ALB_LIMITS.headers
MAX_HEADER_FIELDS = ALB_LIMITS.fields


def service_refusal(status: int, kind: str, message: str) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """A refused request in SageMaker Runtime's shape: ``{"message"}`` and a request id."""
    headers = [(b"content-type", b"application/json"), (b"x-amzn-RequestId", str(uuid.uuid4()).encode())]
    return headers, json.dumps({"message": message}).encode()


def refusal(message: str) -> bytes:
    """The whole 400 response (head and JSON body) for a refused request head."""
    headers, body = service_refusal(400, HEAD_TOO_LARGE, message)
    return response_head(400, headers, length=len(body), close=True) + body


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, refusing request heads over AWS's limits (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._bounds = HeadBounds(ALB_LIMITS)
        self._refused: str | None = None

    def data_received(self, data: bytes) -> None:
        bounds = self._bounds
        if bounds.in_head:
            bounds.read += len(data)
        super().data_received(data)
        if self._refused is None:
            unfinished = bounds.unfinished()
            if unfinished is not None:
                self._refused = unfinished
                self.send_400_response(unfinished)

    def send_400_response(self, msg: str) -> None:
        if self._refused is None:
            super().send_400_response(msg)
            return
        if not self.transport.is_closing():
            self.transport.write(refusal(self._refused))
            self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._bounds.begin()

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        self._check(self._bounds.url, len(self.url))

    def on_header(self, name: bytes, value: bytes) -> None:
        self._check(self._bounds.header, name, value)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._bounds.headers_complete()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._bounds.message_complete()
        super().on_message_complete()

    def _check(self, bound: Any, *args: Any) -> None:
        try:
            bound(*args)
        except HeadTooLarge as exc:
            self._refused = str(exc)
            raise
