"""The front end's HTTP protocol: uvicorn's httptools (llhttp) protocol with bounded request heads.

llhttp refuses ambiguous framing (two lengths, length with chunking, bare LF, obsolete folding: the
request-smuggling ingredients) but puts no bound on the request line and headers, which it buffers until
they are complete. :class:`BoundedHttpToolsProtocol` bounds them as gunicorn's own parser does: a request
target over 8190 bytes, more than 100 header fields or a request head over 64 KiB is answered 400 and the
connection closed, so a head never holds more than one read beyond 64 KiB in memory.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

MAX_REQUEST_TARGET = 8190
MAX_HEADER_FIELDS = 100
MAX_REQUEST_HEAD = 64 * 1024


class RequestHeadTooLarge(Exception):
    """Raised inside an llhttp callback: the parser stops, uvicorn answers 400 and closes."""


class CoalescingTransport:
    """A transport whose writes of one event-loop turn leave in one ``send``.

    uvicorn writes a response's head and body separately; joined, a response is one system call and one
    TCP segment, which the client reads with one wake-up. Everything but ``write`` and ``close`` is the
    real transport's.
    """

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._chunks: list[bytes] = []

    def write(self, data: bytes) -> None:
        self._chunks.append(data)
        if len(self._chunks) == 1:
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        if self._chunks:
            data = b"".join(self._chunks)
            self._chunks.clear()
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with bounds on the request head and one write per response."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(
            cast(asyncio.Transport, CoalescingTransport(cast(asyncio.Transport, transport)))
        )

    _in_head = True  # between the end of one message and the end of the next one's headers
    _head_bytes = 0  # bytes read while in the head (what llhttp may be buffering)
    _header_count = 0
    _header_bytes = 0  # the parsed fields of the current head

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._in_head and self._head_bytes > MAX_REQUEST_HEAD and not self.transport.is_closing():
            self.send_400_response(f"Request head over {MAX_REQUEST_HEAD} bytes.")

    def on_message_begin(self) -> None:
        self._header_count = self._header_bytes = 0
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        super().on_url(url)  # llhttp may deliver the target in pieces: the bound is on the whole
        if len(self.url) > MAX_REQUEST_TARGET:
            raise RequestHeadTooLarge(f"request target over {MAX_REQUEST_TARGET} bytes")

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > MAX_HEADER_FIELDS:
            raise RequestHeadTooLarge(f"more than {MAX_HEADER_FIELDS} header fields")
        self._header_bytes += len(name) + len(value) + 4
        if self._header_bytes > MAX_REQUEST_HEAD:  # a whole head that arrived in a single read
            raise RequestHeadTooLarge(f"request head over {MAX_REQUEST_HEAD} bytes")
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_bytes = 0
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head = True
