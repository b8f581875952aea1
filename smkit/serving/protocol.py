"""The front end's HTTP protocol: llhttp (httptools) parsing, bounded heads, one exchange per request.

llhttp refuses ambiguous framing (two lengths, length with chunking, bare LF, obsolete folding: the
request-smuggling ingredients) but puts no bound on the request line and headers, which it buffers until
they are complete. :class:`FrontEndProtocol` bounds them with the limits AWS documents for its HTTP front
doors (request line 16 KiB, one header 16 KiB, all headers 64 KiB, answered 400:
https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-limits.html#http-headers-quotas)
and at most 100 header fields (gunicorn's bound; AWS documents none). A refused head is answered 400 with
the runtime's JSON error body (``{"code", "type", "message"}``, the message naming the field, size, limit
and fix) and the connection closed, so a head never holds more than one read beyond the limits in memory.

The protocol extends uvicorn's httptools protocol (its server, connection bookkeeping, graceful shutdown
and 400 answers) but runs requests without ASGI: a request is an :class:`Exchange` that collects its
body from the parser's callbacks and is handed to :class:`~smkit.serving.frontend.FrontEnd` once
complete; the reply comes back as a call, and its head and body leave in one ``write``. No task, event
or timer per request: on two cores shared with the model workers, the front end's CPU per request
bounds the throughput of a fast model. Pipelined requests are answered in order.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
from collections import deque
from typing import TYPE_CHECKING, Any, cast

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from smkit.serving.bidi import BIDI_PATH
from smkit.serving.chunked import LAST_CHUNK, StreamState, framed

if TYPE_CHECKING:
    from smkit.serving.frontend import FrontEnd

MAX_REQUEST_TARGET = 16 * 1024
MAX_HEADER_FIELD = 16 * 1024
MAX_HEADER_FIELDS = 100
MAX_REQUEST_HEAD = 64 * 1024
HEAD_FIX = "send large data in the body, not in headers or the URL"
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
LARGE_BODY = 64 * 1024  # written after the head rather than joined to it


class RequestHeadTooLarge(Exception):
    """Raised inside an llhttp callback: the parser stops, uvicorn answers 400 and closes."""


class Exchange:
    """One request of a connection, from the end of its head to the end of its response.

    ``discard`` counts body bytes still to be read and dropped (an oversize body, answered 413 once they
    are read: the client gets its answer instead of a broken pipe); ``too_large`` holds the 413's
    message then.
    """

    __slots__ = (
        "conn",
        "method",
        "path",
        "headers",
        "chunks",
        "size",
        "complete",
        "keep_alive",
        "expect_continue",
        "discard",
        "too_large",
        "started",
        "answered",
        "stream",
    )

    def __init__(
        self,
        conn: FrontEndProtocol,
        method: str,
        path: str,
        headers: list[tuple[bytes, bytes]],
        keep_alive: bool,
        started: float,
    ) -> None:
        self.conn = conn
        self.method = method
        self.path = path
        self.headers = headers
        self.chunks: list[bytes] = []
        self.size = 0
        self.complete = False
        self.keep_alive = keep_alive
        self.expect_continue = False
        self.discard = 0
        self.too_large: str | None = None
        self.started = started
        self.answered = False
        self.stream: StreamState | None = None

    def respond(self, head: bytes, body: bytes, close: bool = False) -> None:
        """Send the response (``head`` ends with the blank line) once; later calls are ignored."""
        if self.answered:
            return
        self.answered = True
        self.conn.responded(self, head, body, close or not self.keep_alive)


class FrontEndProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with bounded request heads and :class:`Exchange` requests."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.front = cast("FrontEnd", self.config.app)  # the object server.run passed
        self.exchanges: deque[Exchange] = deque()  # in request order; the first is being answered
        self._in_head = True  # between the end of one message and the end of the next one's headers
        self._head_bytes = 0  # bytes read while in the head (what llhttp may be buffering)
        self._header_count = 0
        self._header_bytes = 0  # the parsed fields of the current head
        self._quiet = True  # no bytes since the keep-alive check last ran
        self._upgrade: tuple[bytes, bytes, list[tuple[bytes, bytes]]] | None = None  # a WebSocket handshake
        self._refused: str | None = None  # why the request head is refused (answered by send_400_response)

    # -- connection ----------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_keep_alive()

    def connection_lost(self, exc: Exception | None) -> None:
        for exchange in self.exchanges:
            exchange.answered = True  # a reply that still comes is dropped
            self.front.forget(exchange)
            state = exchange.stream
            if state is not None and not state.ended:
                state.control.cancel()  # the handler stops at its next item
                self.front.stream_end(exchange, "the client closed the connection before the end")
        self.exchanges.clear()
        self.cycle = None  # type: ignore[assignment]
        super().connection_lost(exc)

    def shutdown(self) -> None:
        """Graceful stop: close now when idle, else after the response in flight."""
        if not self.exchanges:
            self.transport.close()
        else:
            for exchange in self.exchanges:
                exchange.keep_alive = False

    def _arm_keep_alive(self) -> None:
        # One timer per connection re-armed each period, not one per request: a connection with no
        # bytes and no request for one to two periods is closed.
        self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive, self._check_idle)

    def _check_idle(self) -> None:
        if self.transport.is_closing() or self._upgrade is not None:
            return
        if self._quiet and not self.exchanges:
            self.transport.close()
            return
        self._quiet = True
        self._arm_keep_alive()

    def data_received(self, data: bytes) -> None:
        self._quiet = False
        if self._in_head:
            self._head_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.logger.warning("Invalid HTTP request received: %s", exc)
            self.send_400_response("Invalid HTTP request received.")
            return
        except httptools.HttpParserUpgrade:
            if self._upgrade is not None:  # a WebSocket on /invocations-bidirectional-stream
                self._to_websocket()
                return
            # No other upgraded protocol is part of the hosting contract: the request was parsed and is answered
            # as plain HTTP; what follows the head in this read is not HTTP and is dropped.
            self.logger.debug("Upgrade request answered as plain HTTP")
        if self.exchanges and not self.exchanges[-1].complete:
            self.front.reading(self.exchanges[-1])  # its body is still on the way: bound the wait
        if self._in_head and self._head_bytes > MAX_REQUEST_HEAD and not self.transport.is_closing():
            self._refused = f"Request head over {MAX_REQUEST_HEAD} bytes and not finished; {HEAD_FIX}."
            self.send_400_response(self._refused)

    def send_400_response(self, msg: str) -> None:
        """uvicorn's plain 400, or for a refused head the runtime's JSON error body."""
        if self._refused is None:
            super().send_400_response(msg)
            return
        body = json.dumps(
            {"code": 400, "type": "RequestHeaderFieldsTooLarge", "message": self._refused}
        ).encode()
        self.transport.write(
            STATUS_LINE[400]
            + b"content-type: application/json\r\ncontent-length: "
            + str(len(body)).encode()
            + b"\r\nconnection: close\r\n\r\n"
            + body
        )
        self.transport.close()

    # -- parser callbacks ----------------------------------------------------------------------------
    def on_message_begin(self) -> None:
        self.url = b""
        self.expect_100_continue = False
        self.headers = []
        self._header_count = self._header_bytes = 0

    def on_url(self, url: bytes) -> None:
        self.url += url  # llhttp may deliver the target in pieces: the bound is on the whole
        if len(self.url) > MAX_REQUEST_TARGET:
            self._refused = f"Request line over {MAX_REQUEST_TARGET} bytes (the URL is); {HEAD_FIX}."
            raise RequestHeadTooLarge(self._refused)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        field = len(name) + len(value) + 4
        self._header_bytes += field
        shown = name.decode("latin-1")[:64]
        if field > MAX_HEADER_FIELD:
            self._refused = (
                f"Request header {shown} is {field} bytes, over the {MAX_HEADER_FIELD}-byte limit of one "
                f"header; {HEAD_FIX}."
            )
        elif self._header_bytes > MAX_REQUEST_HEAD:  # a whole head that arrived in a single read
            self._refused = f"Request head over {MAX_REQUEST_HEAD} bytes (at {shown}); {HEAD_FIX}."
        elif self._header_count > MAX_HEADER_FIELDS:
            self._refused = f"More than {MAX_HEADER_FIELDS} request header fields (at {shown}); send fewer."
        if self._refused is not None:
            raise RequestHeadTooLarge(self._refused)
        name = name.lower()
        if name == b"expect" and value.lower() == b"100-continue":
            self.expect_100_continue = True
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_bytes = 0
        parser = self.parser
        url = self.url
        if url[:1] == b"/" and b"?" not in url and b"#" not in url:
            raw_path = url  # the usual origin-form target, no query: nothing to split
        else:
            raw_path = httptools.parse_url(url).path or b"/"
        path = raw_path.decode("ascii")
        if "%" in path:
            path = urllib.parse.unquote(path)
        if path == BIDI_PATH and self.ws_protocol_class is not None and _wants_websocket(self.headers):
            self._upgrade = (parser.get_method(), url, self.headers)  # handed over when llhttp stops
            return
        keep_alive = parser.should_keep_alive() and parser.get_http_version() != "1.0"
        exchange = Exchange(
            self, parser.get_method().decode("ascii"), path, self.headers, keep_alive, time.perf_counter()
        )
        exchange.expect_continue = self.expect_100_continue
        self.exchanges.append(exchange)
        self.front.opened(exchange)
        if len(self.exchanges) == 1:
            self._start(exchange)
        else:
            self.flow.pause_reading()  # pipelined: read on when the ones before it are answered

    def on_body(self, body: bytes) -> None:
        exchange = self.exchanges[-1]
        if exchange.discard:
            exchange.discard = max(0, exchange.discard - len(body))
            if not exchange.discard:  # read as much as is worth reading: answer and close
                exchange.keep_alive = False
                exchange.complete = True
                self._run_if_first(exchange)
            return
        exchange.chunks.append(body)
        exchange.size += len(body)
        if exchange.size > self.front.max_payload_bytes and not exchange.answered:
            self.front.oversize(exchange, exchange.size)

    def on_message_complete(self) -> None:
        self._in_head = True
        if not self.exchanges:
            return
        exchange = self.exchanges[-1]
        if exchange.complete:
            return
        exchange.complete = True
        exchange.discard = 0
        self._run_if_first(exchange)

    # -- requests ------------------------------------------------------------------------------------
    def _start(self, exchange: Exchange) -> None:
        """``exchange`` is first in line: ask for its body if the client waits to be asked, run it."""
        if exchange.expect_continue and not exchange.complete and not exchange.answered:
            self.transport.write(CONTINUE)
        self._run_if_first(exchange)

    def _run_if_first(self, exchange: Exchange) -> None:
        if exchange.complete and self.exchanges and self.exchanges[0] is exchange:
            self.front.run(exchange)

    def responded(self, exchange: Exchange, head: bytes, body: bytes, close: bool) -> None:
        """Write one response in one ``write``; start the next pipelined request, or close."""
        transport = self.transport
        if transport.is_closing():
            return
        if not self.exchanges or self.exchanges[0] is not exchange:
            transport.close()  # answered before its turn (a pipelined upload cut off): nothing follows
            return
        if exchange.method == "HEAD":
            body = b""
        if len(body) < LARGE_BODY:
            transport.write(head + body)
        else:  # no copy of a large body
            transport.write(head)
            transport.write(body)
        self._answered(close)

    def _answered(self, close: bool) -> None:
        """The first exchange's response is written: close, or go on with the next pipelined request."""
        if close:
            self.transport.close()
            return
        self._quiet = False  # the keep-alive period starts now, not at the last request's bytes
        self.exchanges.popleft()
        self.server_state.total_requests += 1
        if self.exchanges:
            self.flow.resume_reading()
            self._start(self.exchanges[0])

    # -- WebSocket -----------------------------------------------------------------------------------
    def _to_websocket(self) -> None:
        """Hand the connection to uvicorn's WebSocket protocol, which answers the handshake itself."""
        method, url, headers = self._upgrade or (b"GET", b"/", [])
        if self.exchanges:  # an upgrade behind pipelined requests still being answered
            self._upgrade = None
            self.send_400_response("WebSocket upgrade while requests are in flight on this connection.")
            return
        if self.timeout_keep_alive_task is not None:
            self.timeout_keep_alive_task.cancel()
        self.connections.discard(self)
        head = [method, b" ", url, b" HTTP/1.1\r\n"]
        for name, value in headers:
            head += [name, b": ", value, b"\r\n"]
        head.append(b"\r\n")
        assert self.ws_protocol_class is not None
        protocol = self.ws_protocol_class(  # type: ignore[call-arg]
            config=self.config, server_state=self.server_state, app_state=self.app_state
        )
        protocol.connection_made(self.transport)
        protocol.data_received(b"".join(head))
        self.transport.set_protocol(protocol)

    # -- streamed responses --------------------------------------------------------------------------
    def stream_start(self, exchange: Exchange, state: StreamState, head: bytes, first: bytes) -> None:
        """Write the head of a streamed response and its first chunk."""
        transport = self.transport
        if exchange.answered or transport.is_closing() or self.exchanges[0] is not exchange:
            state.control.cancel()
            return
        exchange.answered = True
        exchange.stream = state  # before the write: a full buffer pauses the worker at once
        state.first_byte = time.perf_counter()
        if first:
            state.sent = len(first)
            state.chunks = 1
            transport.writelines([head, *framed(first, state.chunked)])
        else:
            transport.write(head)

    def stream_write(self, exchange: Exchange, data: bytes) -> None:
        state = exchange.stream
        if state is None or state.ended or self.transport.is_closing():
            return
        state.sent += len(data)
        state.chunks += 1
        self.transport.writelines(framed(data, state.chunked))

    def stream_finish(self, exchange: Exchange, error: str | None) -> None:
        """End the stream: the last chunk when complete; after an error, close without it."""
        state = exchange.stream
        if state is None or state.ended:
            return
        state.ended = True
        state.control.resume()
        transport = self.transport
        if transport.is_closing():
            return
        if error is not None:
            # A chunked body without its last chunk is an error to every HTTP client; a body framed by the
            # close alone (HTTP/1.0) is cut by a reset instead.
            if state.chunked:
                transport.close()
            else:
                transport.abort()
            return
        if state.chunked:
            transport.write(LAST_CHUNK)
        self._answered(state.close or not exchange.keep_alive)

    def pause_writing(self) -> None:
        super().pause_writing()
        state = self.exchanges[0].stream if self.exchanges else None
        if state is not None and not state.ended:
            state.control.pause()  # the worker's writes block: back-pressure up to the handler

    def resume_writing(self) -> None:
        super().resume_writing()
        state = self.exchanges[0].stream if self.exchanges else None
        if state is not None and not state.ended:
            state.control.resume()


def _wants_websocket(headers: list[tuple[bytes, bytes]]) -> bool:
    return any(name == b"upgrade" and value.lower() == b"websocket" for name, value in headers)


def status_line(status: int) -> bytes:
    """``HTTP/1.1 <status> <reason>\\r\\n``."""
    return STATUS_LINE[status]
