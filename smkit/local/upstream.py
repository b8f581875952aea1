"""The local gateway's HTTP/1.1 client to its containers: kept-alive connections parsed with llhttp.

Every invocation the gateway relays is one request to a container on 127.0.0.1. A general-purpose client
(httpx over httpcore and anyio) spent most of the gateway's CPU per request on its connection pool, its
stream abstraction and two socket writes per request (bench/local_gateway.py, BENCHMARKS.md). This client
does only what the relay needs: a pool of idle connections per container, the request head and body
written in one ``write``, the answer parsed by llhttp (httptools, which the gateway's server side uses too)
from an :class:`asyncio.Protocol`, no task or lock per request.

Semantics kept from the client it replaces:

- ``timeout_s`` bounds the wait for the answer's head, then every wait for more of its body (a read
  timeout, not a total one): :class:`UpstreamTimeout`.
- A kept-alive connection the container closed while it sat idle fails before any byte of the answer
  arrived: :class:`UpstreamClosed` with ``before_answer`` true, which the caller may retry once on a new
  connection. A connection refused is :class:`UpstreamConnectError`.
- A streamed body (:meth:`Connection.chunks`) is read as it arrives; while more than
  :data:`HIGH_WATER` bytes wait unread the socket stops being read (back-pressure up to the container).

A connection goes back to the pool only when its answer ended and llhttp says it may be kept alive.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Iterable

import httptools

HIGH_WATER = 256 * 1024  # unread body bytes of a streamed answer before the socket is paused
MAX_IDLE = 16  # idle connections kept per container
CONNECT_TIMEOUT_S = 5.0
_FRAMING = (b"content-length", b"transfer-encoding")  # fields that frame a body; without them, the close does


class UpstreamError(Exception):
    """The container could not be reached or its answer could not be read."""


class UpstreamConnectError(UpstreamError):
    """The container refused the connection (or it did not open in time)."""


class UpstreamTimeout(UpstreamError):
    """The container sent nothing for ``timeout_s``."""


class UpstreamClosed(UpstreamError):
    """The container closed the connection before the end of its answer."""

    def __init__(self, message: str, *, before_answer: bool) -> None:
        super().__init__(message)
        self.before_answer = before_answer


def encode_head(method: str, path: str, host: str, headers: Iterable[tuple[str, str]], length: int) -> bytes:
    """A request head with ``Content-Length`` (every request here has a body of known size, maybe empty)."""
    head = f"{method} {path} HTTP/1.1\r\nhost: {host}\r\ncontent-length: {length}\r\n"
    for name, value in headers:  # a few fields: appending is cheaper than a generator
        head += f"{name}: {value}\r\n"
    return (head + "\r\n").encode("latin-1")


class Connection(asyncio.Protocol):
    """One connection to a container; one request at a time."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.fields: list[tuple[bytes, bytes]] = []  # the answer's head fields as parsed, names lower-case
        self._body: list[bytes] = []
        self._buffered = 0
        self._paused = False
        self._streaming = False
        self._waiter: asyncio.Future[None] | None = None
        self._head_done = False
        self.complete = False  # the answer has arrived to its end
        self._error: UpstreamError | None = None
        self._received = False
        self._last_data = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0  # when _timer fires (loop time)
        self._timeout_s = 0.0
        self.reusable = False
        self.content = b""  # the body of an answer read whole

    # --- asyncio.Protocol ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports subclass none of asyncio's

    def data_received(self, data: bytes) -> None:
        self._received = True
        self._last_data = self.pool.loop.time()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(UpstreamClosed("the container switched protocols", before_answer=False))
        except httptools.HttpParserError as exc:
            self._fail(
                UpstreamClosed(f"the container's answer is not valid HTTP ({exc})", before_answer=False)
            )
            if self.transport is not None:
                self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.reusable = False
        self._cancel_timer()
        self.pool.forget(self)
        if self._head_done and not any(name in _FRAMING for name, _ in self.fields):
            # A body framed by the close alone (RFC 9112 section 6.3): the close is its end.
            self.complete = True
            self._wake()
        if not self.complete:
            if self._head_done:
                message = "the container closed the connection before the end of its answer"
            else:
                message = "Server disconnected without sending a response."
            self._fail(UpstreamClosed(message, before_answer=not self._received))

    def pause_writing(self) -> None:  # a request body larger than the socket buffer: the kernel takes it
        pass

    def resume_writing(self) -> None:
        pass

    # --- llhttp callbacks --------------------------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        self.fields.append((name.lower(), value))  # decoded by whoever reads them (containers.whole_reply)

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self._head_done = True
        if self._streaming:
            self._wake()

    def on_body(self, body: bytes) -> None:
        self._body.append(body)
        if self._streaming:
            self._buffered += len(body)
            if self._buffered > HIGH_WATER and not self._paused and self.transport is not None:
                self._paused = True
                self.transport.pause_reading()
            self._wake()

    def on_message_complete(self) -> None:
        self.complete = True
        self.reusable = self.parser.should_keep_alive()
        self._wake()  # the read timer lapses by itself (_check_idle)

    # --- waiting -------------------------------------------------------------------------------------

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():  # else its reader was cancelled
                waiter.set_result(None)

    def _fail(self, error: UpstreamError) -> None:
        if self._error is None:
            self._error = error
        self._cancel_timer()
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_exception(error)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self, deadline: float) -> None:
        self._timer_at = deadline
        self._timer = self.pool.loop.call_at(deadline, self._check_idle)

    def _check_idle(self) -> None:
        # A read timeout without a timer per read, nor per request: the timer fires at the deadline of the
        # last byte seen and re-arms itself while an answer is awaited; with none awaited it ends. A
        # connection kept busy by one request after another arms it once per timeout period.
        self._timer = None
        if self.complete or self._error is not None:
            return
        deadline = self._last_data + self._timeout_s
        if self.pool.loop.time() < deadline:
            self._arm(deadline)
            return
        self._fail(UpstreamTimeout(f"the container sent nothing for {self._timeout_s:g} s"))
        if self.transport is not None:
            self.transport.abort()

    def next_event(self) -> asyncio.Future[None]:
        """A future the next event of the answer resolves (bytes, its end, a failure); awaited directly,
        with no coroutine of its own (this runs once per relayed call)."""
        if self._error is not None:
            raise self._error
        waiter = self._waiter = self.pool.loop.create_future()
        return waiter

    # --- one exchange --------------------------------------------------------------------------------

    def send(self, head: bytes, body: bytes, timeout_s: float, *, stream: bool) -> None:
        """Write the request; the answer is awaited with :meth:`read` or :meth:`open`."""
        assert self.transport is not None
        self.status = 0
        self.fields = []
        self._body = []
        self._buffered = 0
        self._streaming = stream
        self._head_done = self.complete = self._received = False
        self._error = None
        self.reusable = False
        self._timeout_s = timeout_s
        now = self._last_data = self.pool.loop.time()
        if self._timer is None or self._timer_at > now + timeout_s:  # else it fires in time, then re-arms
            self._cancel_timer()
            self._arm(now + timeout_s)
        if len(body) < 64 * 1024:
            self.transport.write(head + body)
        else:
            self.transport.writelines((head, body))

    async def read(self) -> bytes:
        """The whole answer's body (status and head fields are on the connection)."""
        while not self.complete:
            await self.next_event()
        body = self._body[0] if len(self._body) == 1 else b"".join(self._body)
        self._body = []
        return body

    async def open(self) -> None:
        """Return once the answer's head has arrived."""
        while not self._head_done:
            await self.next_event()

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives; UpstreamError when it is cut off or stalls."""
        while True:
            if self._body:
                parts, self._body = self._body, []
                self._buffered = 0
                if self._paused and self.transport is not None:
                    self._paused = False
                    self.transport.resume_reading()
                for part in parts:
                    yield part
                continue
            if self.complete:
                return
            await self.next_event()

    def release(self) -> None:
        """Back to the pool when the answer was read to its end and may be kept alive, else closed."""
        if self.complete and self.reusable and self._error is None:
            self.pool.put(self)
        elif self.transport is not None:
            self.transport.abort()  # unread bytes (or a broken answer): this connection cannot be reused


class Pool:
    """Kept-alive connections to one container (``host:port``)."""

    def __init__(self, host: str, port: int, *, max_idle: int = MAX_IDLE) -> None:
        self.host = host
        self.port = port
        self.authority = f"{host}:{port}"
        self.max_idle = max_idle
        self.loop = asyncio.get_running_loop()
        self._idle: deque[Connection] = deque()
        self._open: set[Connection] = set()
        self.closed = False

    def idle(self) -> Connection | None:
        """A kept-alive connection that is still open, or None."""
        while self._idle:
            conn = self._idle.pop()
            if conn.transport is not None and not conn.transport.is_closing():
                return conn
        return None

    async def connect(self) -> Connection:
        """A new connection."""
        try:
            _, conn = await asyncio.wait_for(
                self.loop.create_connection(lambda: Connection(self), self.host, self.port),
                CONNECT_TIMEOUT_S,
            )
        except (OSError, TimeoutError) as exc:
            raise UpstreamConnectError(f"cannot connect to {self.authority}: {exc}") from exc
        self._open.add(conn)
        return conn

    def put(self, conn: Connection) -> None:
        if self.closed or len(self._idle) >= self.max_idle:
            if conn.transport is not None:
                conn.transport.close()
            return
        self._idle.append(conn)

    def forget(self, conn: Connection) -> None:
        self._open.discard(conn)
        with contextlib.suppress(ValueError):
            self._idle.remove(conn)

    def close(self) -> None:
        """Close every connection (answers in flight fail with UpstreamClosed)."""
        self.closed = True
        for conn in list(self._open):
            if conn.transport is not None:
                conn.transport.abort()
        self._idle.clear()
        self._open.clear()

    async def _send(
        self,
        method: str,
        path: str,
        body: bytes,
        headers: dict[str, str] | Iterable[tuple[str, str]],
        timeout_s: float,
        stream: bool,
    ) -> Connection:
        # A kept-alive connection closed by the container before it answered is retried once on a new
        # connection; so is a refused connection (a container restarting).
        fields = headers.items() if isinstance(headers, dict) else headers
        head = encode_head(method, path, self.authority, fields, len(body))
        for attempt in (1, 2):
            # An idle connection is taken without a coroutine (no await): the usual case.
            conn = self.idle() if attempt == 1 else None
            if conn is None:
                try:
                    conn = await self.connect()
                except UpstreamConnectError:
                    if attempt == 2:
                        raise
                    continue
            conn.send(head, body, timeout_s, stream=stream)
            try:
                if stream:
                    await conn.open()
                else:
                    conn.content = await conn.read()
                return conn
            except UpstreamClosed as exc:
                conn.release()
                if attempt == 2 or not exc.before_answer:
                    raise
            except BaseException:
                conn.release()
                raise
        raise AssertionError("unreachable")

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: bytes = b"",
        headers: dict[str, str] | Iterable[tuple[str, str]] = (),
        timeout_s: float,
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """One request, its answer read whole: (status, head fields as parsed with lower-case names, body).
        The fields are left undecoded: the gateway reads two or three of them per call it relays."""
        conn = await self._send(method, path, body, headers, timeout_s, stream=False)
        content, conn.content = conn.content, b""
        conn.release()
        return conn.status, conn.fields, content

    async def open_stream(
        self,
        method: str,
        path: str,
        *,
        body: bytes = b"",
        headers: dict[str, str] | Iterable[tuple[str, str]] = (),
        timeout_s: float,
    ) -> Connection:
        """One request, returned once the answer's head arrived: its status and head fields are on the
        connection; read the body with :meth:`Connection.chunks` (or :meth:`Connection.read`), then
        :meth:`Connection.release` it."""
        return await self._send(method, path, body, headers, timeout_s, stream=True)
