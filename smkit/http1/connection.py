"""One HTTP/1.1 server connection: llhttp (httptools) parsing, bounded heads, requests as plain objects.

:class:`HTTP1Protocol` is an :class:`asyncio.Protocol`. llhttp's callbacks build a :class:`Request` per
message; once its body is complete and every request before it on the connection is answered, the
:class:`Handler` is called with it (pipelined requests are answered in order; reading pauses while one
waits). The handler answers when it likes, from a callback or a task, with :meth:`Request.respond` (one
``write`` of head and body) or a streamed response (:meth:`Request.stream`, :meth:`Request.write`,
:meth:`Request.finish`; chunked, with back-pressure passed on to a :class:`Flow`). No task, event or
timer is made per request: the handler decides what a request costs.

llhttp refuses ambiguous framing (two lengths, length with chunking, bare LF, obsolete folding: the
request-smuggling ingredients, RFC 9112 §6.3) but puts no bound on a head; :mod:`smkit.http1.head_limits`
does. A refused head and a malformed request are answered 400 in the server's shape (a :data:`Refusal`)
and the connection is closed. Other per-connection rules: ``Expect: 100-continue`` is answered when the
request is first in line; a body over :attr:`Handler.max_body` is read and dropped up to
:attr:`Handler.drain_limit` bytes so the client gets the handler's answer (``request.too_large``) rather
than a reset; an idle connection is closed after the keep-alive period by one timer per connection; HTTP/1.0
connections close after each answer.
"""

from __future__ import annotations

import abc
import asyncio
import json
import logging
import time
import urllib.parse
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import httptools

from smkit.contract import DRAIN_LIMIT
from smkit.http1.head_limits import HeadBounds, HeadTooLarge
from smkit.http1.responses import CONTINUE, LAST_CHUNK, DateLine, Headers, framed, response_head

log = logging.getLogger("smkit.http1")

LARGE_BODY = 64 * 1024  # a body this large is written after the head rather than joined to it
BAD_REQUEST = "BadRequest"
HEAD_TOO_LARGE = "RequestHeaderFieldsTooLarge"

# (status, error type, message) -> the refusal's headers (content type and any others; not the framing
# ones) and body. The error types are BAD_REQUEST, HEAD_TOO_LARGE and "InternalFailure" (a handler raised).
Refusal = Callable[[int, str, str], tuple[Headers, bytes]]


def message_refusal(status: int, kind: str, message: str) -> tuple[Headers, bytes]:
    """The default refusal: ``{"message": ...}`` as JSON."""
    return [(b"content-type", b"application/json")], json.dumps({"message": message}).encode()


class Flow:
    """Back-pressure of a streamed response for a producer on the event loop: ``await flow.wait()``.

    Anything with ``pause()`` and ``resume()`` may be given to :meth:`Request.stream` instead (the
    serving runtime passes its worker-stream control).
    """

    __slots__ = ("_writable",)

    def __init__(self) -> None:
        self._writable = asyncio.Event()
        self._writable.set()

    def pause(self) -> None:
        self._writable.clear()

    def resume(self) -> None:
        self._writable.set()

    async def wait(self) -> None:
        """Return once the connection takes more data (at once unless its buffer is full)."""
        await self._writable.wait()


class Handler(abc.ABC):
    """What a server calls for its requests. Override :meth:`request`; the other hooks are optional.

    Every hook runs on the event loop, inside the parser's callbacks: it must not block. An exception out
    of :meth:`request` is logged and answered 500 (the connection closes).
    """

    max_body: int | None = None  # a longer body is not kept: request.too_large is set (see Request)
    drain_limit: int = DRAIN_LIMIT  # an oversize body is read and dropped up to this many more bytes

    @abc.abstractmethod
    def request(self, request: Request) -> None:
        """``request`` has its whole body and its turn: answer it, now or later."""

    def waiting(self, request: Request) -> None:
        """A read ended with ``request``'s body still incomplete (called after every such read)."""
        return None  # optional hook

    def aborted(self, request: Request) -> None:
        """The connection was lost before ``request``'s answer was complete (its stream may be open)."""
        return None  # optional hook

    def wants_upgrade(self, request: Request) -> bool:
        """A request asks for a protocol upgrade: True to take the connection (:meth:`upgraded`)."""
        return False

    def upgraded(self, request: Request, transport: asyncio.Transport, rest: bytes) -> None:
        """The connection is the handler's from now on (``transport.set_protocol``); ``rest`` is what the
        client sent after the head. It is no longer among the server's connections; to be stopped with
        them, add the new protocol to ``request.conn.server.connections`` (a
        :class:`~smkit.http1.runner.TrackedConnection`)."""
        transport.close()


@dataclass(slots=True, eq=False)
class Request:
    """One request of a connection, from the end of its head to the end of its response.

    Read: ``method`` (str), ``target`` (the raw request target, bytes), ``path`` (its path, percent-decoded
    str), ``headers`` (``(name, value)`` bytes pairs in order, names lower-case), ``version`` ("1.1",
    "1.0"), ``chunks`` (the body as read, a list of bytes; :attr:`body` joins it), ``size`` (body bytes
    kept), ``started`` (``time.perf_counter()`` at the end of the head). ``too_large`` is the body size
    (declared or read) when it went over :attr:`Handler.max_body`: the body is then dropped, not kept.
    ``keep_alive`` is whether the connection stays open after the answer (set it False to close).
    ``app`` is free for the handler's own data.
    """

    conn: HTTP1Protocol = field(repr=False)
    method: str
    target: bytes
    path: str
    headers: list[tuple[bytes, bytes]]
    version: str
    keep_alive: bool
    chunks: list[bytes] = field(init=False, default_factory=list)
    size: int = field(init=False, default=0)
    complete: bool = field(init=False, default=False)
    expect_continue: bool = field(init=False, default=False)
    discard: int = field(init=False, default=0)  # body bytes still to read and drop (an oversize body)
    too_large: int | None = field(init=False, default=None)
    started: float = field(init=False, default_factory=time.perf_counter)
    # A response (plain or the head of a stream) was sent, or can no longer be.
    answered: bool = field(init=False, default=False)
    streaming: bool = field(init=False, default=False)
    ended: bool = field(init=False, default=False)  # the stream is finished (or its connection lost)
    flow: Any = field(init=False, default=None, repr=False)
    sent: int = field(init=False, default=0)  # streamed body bytes written, framing not counted
    app: Any = field(init=False, default=None, repr=False)

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)

    @property
    def chunked(self) -> bool:
        """A streamed body is chunked; for HTTP/1.0 it is ended by the close."""
        return self.version != "1.0"

    def header(self, name: bytes) -> bytes | None:
        """The first value of header ``name`` (lower-case), or None."""
        for key, value in self.headers:
            if key == name:
                return value
        return None

    def header_text(self, name: bytes) -> str | None:
        """The first value of header ``name`` (lower-case) as text (latin-1, as HTTP/1.1 carries it), or None."""
        value = self.header(name)
        return None if value is None else value.decode("latin-1")

    # -- plain responses -------------------------------------------------------------------------
    def respond(
        self,
        status: int,
        headers: Headers = (),
        body: bytes = b"",
        *,
        close: bool = False,
        lines: bytes = b"",
    ) -> None:
        """Send a whole response: ``content-length``, ``date`` and (when closing) ``connection`` are added.

        ``headers`` must not hold those framing fields. ValueError for an unknown status or a bad header.
        ``lines``: header lines already encoded and checked by the caller (:func:`response_head`).
        """
        if self.answered:
            return
        close = close or not self.keep_alive
        # Built before respond_raw marks the request answered: a bad header leaves it to be answered.
        head = response_head(
            status, headers, length=len(body), close=close, date=self.conn.server.date(), lines=lines
        )
        self.respond_raw(head, body, close=close)

    def respond_raw(self, head: bytes, body: bytes = b"", *, close: bool = False) -> None:
        """Send a response whose ``head`` (ending with the blank line) is prepared; later calls are ignored.

        The connection closes after it when ``close`` or not :attr:`keep_alive` (the head must say so).
        """
        if self.answered:
            return
        self.answered = True
        self.conn.responded(self, head, body, close or not self.keep_alive)

    # -- streamed responses ----------------------------------------------------------------------
    def stream(
        self, status: int, headers: Headers = (), first: bytes = b"", *, close: bool = False, flow: Any = None
    ) -> None:
        """Start a streamed response (chunked; for HTTP/1.0 ended by the close) with ``first`` as its first
        chunk; then :meth:`write` and :meth:`finish`. ``flow`` (a :class:`Flow`, or anything with
        ``pause()`` and ``resume()``) is paused while the connection's write buffer is full."""
        close = close or not self.keep_alive or not self.chunked
        head = response_head(status, headers, chunked=self.chunked, close=close, date=self.conn.server.date())
        self.stream_raw(head, first, close=close, flow=flow)

    def stream_raw(self, head: bytes, first: bytes = b"", *, close: bool = False, flow: Any = None) -> None:
        """:meth:`stream` with a prepared ``head`` (``transfer-encoding: chunked`` when :attr:`chunked`)."""
        self.conn.stream_start(self, head, first, close or not self.keep_alive or not self.chunked, flow)

    def write(self, data: bytes) -> None:
        """One chunk of the streamed body (an empty ``data`` is not sent: it would end the body)."""
        if data:
            self.conn.stream_write(self, data)

    def finish(self, error: str | None = None) -> None:
        """End the stream: the last chunk; after an ``error``, close without it (an incomplete body to
        every client)."""
        self.conn.stream_finish(self, error)


class TrackedConnection(Protocol):
    """What a server tracks and stops: its HTTP connections, and connections a handler upgraded and added
    to :attr:`Server.connections` (removing them with :meth:`Server.closed` when they close)."""

    def shutdown(self) -> None:
        """Close when what is in flight is done."""

    def abort(self) -> None:
        """Close now."""


class ConnectionOwner(Protocol):
    """What a connection needs of its server (:class:`smkit.http1.runner.Server` is one): the handler, the
    refusal shape, the head bounds and idle period, the date line, and the set of connections it tracks."""

    handler: Handler
    refusal: Refusal
    keep_alive_seconds: float
    connections: set[TrackedConnection]
    date: DateLine

    def head_bounds(self) -> HeadBounds:
        """Fresh head bounds for one connection."""
        ...

    def closed(self, conn: TrackedConnection) -> None:
        """``conn`` is closed or upgraded: no longer the server's to wait for."""
        ...


class HTTP1Protocol(asyncio.Protocol):
    """An HTTP/1.1 server connection of a :class:`~smkit.http1.runner.Server` (module docstring)."""

    def __init__(self, server: ConnectionOwner) -> None:
        self.server = server
        self.handler = server.handler
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport = None  # type: ignore[assignment]
        self.parser = httptools.HttpRequestParser(self)
        self.bounds = server.head_bounds()
        self._field_room = self.bounds.field_room
        self._line_room = self.bounds.line_room
        self.requests: deque[Request] = deque()  # in order; the first is being answered
        self._quiet = True  # no bytes since the keep-alive check last ran
        self._timer: asyncio.TimerHandle | None = None
        self._read_paused = False
        self._upgrade: Request | None = None  # a request whose upgrade the handler takes
        # The head being parsed.
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._expect = False
        self._length: bytes | None = None
        self._head_size = 0  # bytes of the fields' names and values so far

    # -- connection ----------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.server.connections.add(self)
        self._arm_keep_alive()

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.closed(self)
        if self._timer is not None:
            self._timer.cancel()
        requests = list(self.requests)
        self.requests.clear()
        for request in requests:
            if request.ended or (request.answered and not request.streaming):
                continue
            request.answered = True  # a reply that still comes is dropped
            try:
                self.handler.aborted(request)
            except Exception:  # noqa: BLE001 - one handler failure must not skip the others
                log.exception("aborted() failed")
            request.ended = True
            flow = request.flow
            if flow is not None:
                flow.resume()

    def shutdown(self) -> None:
        """Graceful stop: close now when idle, else after the response in flight."""
        if not self.requests:
            self.transport.close()
        else:
            for request in self.requests:
                request.keep_alive = False

    def abort(self) -> None:
        """Close at once, in-flight responses cut."""
        self.transport.abort()

    def _arm_keep_alive(self) -> None:
        # One timer per connection re-armed each period, not one per request: a connection with no
        # bytes and no request for one to two periods is closed.
        self._timer = self.loop.call_later(self.server.keep_alive_seconds, self._check_idle)

    def _check_idle(self) -> None:
        if self.transport.is_closing():
            return
        if self._quiet and not self.requests:
            self.transport.close()
            return
        self._quiet = True
        self._arm_keep_alive()

    def data_received(self, data: bytes) -> None:
        self._quiet = False
        bounds = self.bounds
        if bounds.in_head:
            bounds.read += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade as exc:
            if self._upgrade is not None:
                self._to_upgrade(self._upgrade, data[exc.args[0] :] if exc.args else b"")
                return
            # An upgrade the handler did not take: the request was parsed and is answered as plain HTTP;
            # what follows the head in this read is not HTTP and is dropped.
            log.debug("Upgrade request answered as plain HTTP")
        except httptools.HttpParserError as exc:
            cause = exc.__context__
            if isinstance(cause, HeadTooLarge):
                self.refuse(400, HEAD_TOO_LARGE, str(cause))
            else:
                log.debug("Invalid HTTP request: %s", exc)
                self.refuse(400, BAD_REQUEST, f"Invalid HTTP request: {cause or exc}")
            return
        if self.requests and not self.requests[-1].complete:
            self.handler.waiting(self.requests[-1])
        if bounds.in_head and bounds.read > bounds.unfinished_room:
            self.refuse(400, HEAD_TOO_LARGE, bounds.unfinished_too_large())

    def refuse(self, status: int, kind: str, message: str) -> None:
        """Answer ``status`` in the server's refusal shape and close the connection."""
        transport = self.transport
        if transport.is_closing():
            return
        try:
            headers, body = self.server.refusal(status, kind, message)
            transport.write(response_head(status, headers, length=len(body), close=True) + body)
        finally:
            transport.close()

    # -- parser callbacks ----------------------------------------------------------------------------
    # No on_message_begin: the head's state is reset when a head ends (on_headers_complete), so llhttp has
    # one callback less to make per request.

    def on_url(self, url: bytes) -> None:
        self._url += url  # llhttp may deliver the target in pieces: the bound is on the whole
        if len(self._url) > self._line_room:
            raise self.bounds.line_too_large()

    def on_header(self, name: bytes, value: bytes) -> None:
        size = len(name) + len(value)
        if size > self._field_room:
            raise self.bounds.field_too_large(name, value)
        self._head_size += size
        name = name.lower()
        if name == b"content-length":
            self._length = value  # llhttp has checked it is a number
        elif name == b"expect" and value.lower() == b"100-continue":
            self._expect = True
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        fields, url, expect, declared = self._headers, self._url, self._expect, self._length
        self.bounds.headers_complete(fields, self._head_size)
        self._headers, self._url, self._expect, self._length = [], b"", False, None  # for the next head
        self._head_size = 0
        parser = self.parser
        # find(), not `in`: `bytes in bytes` first tries the needle as an int and raises and clears a
        # TypeError inside CPython before it searches (a few thousand instructions per request).
        if url[:1] == b"/" and url.find(b"?") < 0 and url.find(b"#") < 0:
            raw_path = url  # the usual origin-form target, no query: nothing to split
        else:
            raw_path = httptools.parse_url(url).path or b"/"
        path = raw_path.decode("ascii")
        if "%" in path:
            path = urllib.parse.unquote(path)
        version = parser.get_http_version()
        request = Request(
            self,
            parser.get_method().decode("ascii"),
            url,
            path,
            fields,
            version,
            parser.should_keep_alive() and version != "1.0",
        )
        handler = self.handler
        if parser.should_upgrade() and handler.wants_upgrade(request):
            self._upgrade = request  # handed over when llhttp stops at the end of the head
            return
        request.expect_continue = expect
        limit = handler.max_body
        if limit is not None and declared is not None:
            length = int(declared)
            if length > limit:
                request.too_large = length
                # Drop the body, answer when it has all arrived (or close after drain_limit more bytes).
                drain = handler.drain_limit
                request.discard = length + 1 if length <= limit + drain else limit + drain
        self.requests.append(request)
        if len(self.requests) > 1:
            self._pause_reading()  # pipelined: read on when the ones before it are answered
        elif expect:  # first in line and its body not yet sent: ask for it (it runs once complete)
            self._continue(request)

    def on_body(self, body: bytes) -> None:
        request = self.requests[-1]
        if request.discard:
            request.discard = max(0, request.discard - len(body))
            if not request.discard:  # read as much as is worth reading: answer and close
                request.keep_alive = False
                request.complete = True
                self._run_if_first(request)
            return
        request.chunks.append(body)
        request.size += len(body)
        limit = self.handler.max_body
        if limit is not None and request.size > limit and not request.answered:
            request.too_large = request.size
            request.chunks.clear()
            request.discard = self.handler.drain_limit

    def on_message_complete(self) -> None:
        self.bounds.in_head = True  # the next head starts
        if not self.requests:
            return
        request = self.requests[-1]
        if request.complete:
            return
        request.complete = True
        request.discard = 0
        self._run_if_first(request)

    # -- requests ------------------------------------------------------------------------------------
    def _start(self, request: Request) -> None:
        """``request`` is first in line: ask for its body if the client waits to be asked, run it."""
        self._continue(request)
        self._run_if_first(request)

    def _continue(self, request: Request) -> None:
        if request.expect_continue and not request.complete and not request.answered:
            self.transport.write(CONTINUE)

    def _run_if_first(self, request: Request) -> None:
        if request.complete and self.requests and self.requests[0] is request:
            try:
                self.handler.request(request)
            except Exception as exc:  # noqa: BLE001 - a handler's failure is answered, not a parse error
                log.exception("the request handler failed")
                if not request.answered:
                    request.answered = True
                    self.refuse(500, "InternalFailure", f"The server failed to answer the request: {exc!r}")

    def responded(self, request: Request, head: bytes, body: bytes, close: bool) -> None:
        """Write one response in one ``write``; start the next pipelined request, or close."""
        transport = self.transport
        if transport.is_closing():
            return
        if not self.requests or self.requests[0] is not request:
            transport.close()  # answered before its turn (a pipelined upload cut off): nothing follows
            return
        if request.method == "HEAD":
            body = b""
        if len(body) < LARGE_BODY:
            transport.write(head + body)
        else:  # no copy of a large body
            transport.write(head)
            transport.write(body)
        self._answered(close)

    def _answered(self, close: bool) -> None:
        """The first request's response is written: close, or go on with the next pipelined request."""
        if close:
            self.transport.close()
            return
        self._quiet = False  # the keep-alive period starts now, not at the last request's bytes
        self.requests.popleft()
        if self.requests:
            self._resume_reading()
            self._start(self.requests[0])

    def _pause_reading(self) -> None:
        if not self._read_paused:
            self._read_paused = True
            self.transport.pause_reading()

    def _resume_reading(self) -> None:
        if self._read_paused:
            self._read_paused = False
            self.transport.resume_reading()

    # -- upgrades ------------------------------------------------------------------------------------
    def _to_upgrade(self, request: Request, rest: bytes) -> None:
        self._upgrade = None
        if self.requests:  # an upgrade behind pipelined requests still being answered
            self.refuse(400, BAD_REQUEST, "Upgrade while requests are in flight on this connection.")
            return
        if self._timer is not None:
            self._timer.cancel()
        self.server.closed(self)
        self.handler.upgraded(request, self.transport, rest)

    # -- streamed responses --------------------------------------------------------------------------
    def stream_start(self, request: Request, head: bytes, first: bytes, close: bool, flow: Any) -> None:
        """Write the head of a streamed response and its first chunk."""
        transport = self.transport
        if request.answered or transport.is_closing() or not self.requests or self.requests[0] is not request:
            request.answered = request.ended = True
            if flow is not None:
                flow.resume()
            return
        request.answered = request.streaming = True
        request.keep_alive = request.keep_alive and not close
        request.flow = flow  # before the write: a full buffer pauses the producer at once
        if first:
            request.sent = len(first)
            transport.writelines([head, *framed(first, request.chunked)])
        else:
            transport.write(head)

    def stream_write(self, request: Request, data: bytes) -> None:
        if request.ended or not request.streaming or self.transport.is_closing():
            return
        request.sent += len(data)
        self.transport.writelines(framed(data, request.chunked))

    def stream_finish(self, request: Request, error: str | None) -> None:
        if request.ended or not request.streaming:
            return
        request.ended = True
        if request.flow is not None:
            request.flow.resume()
        transport = self.transport
        if transport.is_closing():
            return
        if error is not None:
            # A chunked body without its last chunk is an error to every HTTP client; a body framed by the
            # close alone (HTTP/1.0) is cut by a reset instead.
            if request.chunked:
                transport.close()
            else:
                transport.abort()
            return
        if request.chunked:
            transport.write(LAST_CHUNK)
        self._answered(not request.keep_alive)

    def pause_writing(self) -> None:
        request = self.requests[0] if self.requests else None
        if request is not None and request.flow is not None and not request.ended:
            request.flow.pause()  # the producer's writes wait: back-pressure up to the handler

    def resume_writing(self) -> None:
        request = self.requests[0] if self.requests else None
        if request is not None and request.flow is not None and not request.ended:
            request.flow.resume()
