"""Bounded request heads for the local gateway: uvicorn's httptools protocol with AWS's HTTP header limits.

llhttp (httptools) buffers a request line and header fields until they are complete and puts no bound on
them, so a client could make the gateway hold megabytes of head. AWS documents the limits of its HTTP front
doors for Application Load Balancers: request line 16 KiB, a single header 16 KiB, the entire request
header 64 KiB; a request over any of them is answered 400 Bad Request
(https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-limits.html#http-headers-quotas,
https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-troubleshooting.html#http-400-issues).
SageMaker Runtime documents no limits of its own (docs/request-security.md), so the gateway applies these,
plus at most 100 header fields (none documented by AWS; gunicorn's and the container front end's bound).

The refusal is 400 in the service's error shape without an error type, as the front door (not the service)
answers: a JSON ``message`` naming the field, its size, the limit and the fix; botocore reports the status
as the code. The connection is closed; the gateway keeps serving others.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

MAX_REQUEST_LINE = 16 * 1024
MAX_HEADER_FIELD = 16 * 1024
MAX_REQUEST_HEADERS = 64 * 1024
MAX_HEADER_FIELDS = 100
FIX = "send large data in the body, not in headers or the URL"


class HeadTooLarge(Exception):
    """Raised inside an llhttp callback: the parser stops and the request is refused."""


def refusal(message: str) -> bytes:
    """The whole 400 response (head and JSON body) for a refused request head."""
    body = json.dumps({"message": message}).encode()
    head = (
        STATUS_LINE[400] + b"content-type: application/json\r\n"
        b"x-amzn-RequestId: " + str(uuid.uuid4()).encode() + b"\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n"
    )
    return head + body


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, refusing request heads over AWS's limits (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = True
        self._head_bytes = 0  # bytes read while a head is incomplete (what llhttp may be buffering)
        self._fields = 0
        self._header_bytes = 0
        self._refused: str | None = None

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        # Counted after parsing: one read may hold a whole head and the start of a large body, which is no
        # head over its limit. A head still unfinished after this many bytes will not fit: refuse it now.
        if (
            self._in_head
            and self._refused is None
            and self._head_bytes > MAX_REQUEST_LINE + MAX_REQUEST_HEADERS
        ):
            self._refused = (
                f"Request head over {MAX_REQUEST_LINE + MAX_REQUEST_HEADERS} bytes and not finished "
                f"(limits: request line {MAX_REQUEST_LINE}, headers {MAX_REQUEST_HEADERS}); {FIX}."
            )
            self.send_400_response(self._refused)

    def send_400_response(self, msg: str) -> None:
        if self._refused is None:
            super().send_400_response(msg)
            return
        if not self.transport.is_closing():
            self.transport.write(refusal(self._refused))
            self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._fields = self._header_bytes = 0

    def on_url(self, url: bytes) -> None:
        super().on_url(url)  # llhttp may deliver the target in pieces: the bound is on the whole
        if len(self.url) > MAX_REQUEST_LINE:
            self._refused = f"Request line over {MAX_REQUEST_LINE} bytes (the URL is); {FIX}."
            raise HeadTooLarge(self._refused)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._fields += 1
        field = len(name) + len(value) + 4
        self._header_bytes += field
        shown = name.decode("latin-1")[:64]
        if field > MAX_HEADER_FIELD:
            self._refused = (
                f"Request header {shown} is {field} bytes, over the {MAX_HEADER_FIELD}-byte limit of one "
                f"header; {FIX}."
            )
        elif self._header_bytes > MAX_REQUEST_HEADERS:
            self._refused = f"Request headers over {MAX_REQUEST_HEADERS} bytes in all (at {shown}); {FIX}."
        elif self._fields > MAX_HEADER_FIELDS:
            self._refused = f"More than {MAX_HEADER_FIELDS} request header fields (at {shown}); send fewer."
        if self._refused is not None:
            raise HeadTooLarge(self._refused)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_bytes = 0
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._in_head = True
        super().on_message_complete()
