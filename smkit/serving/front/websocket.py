"""Bidirectional streaming, front-end side: ``/invocations-bidirectional-stream`` over WebSocket.

SageMaker's bidirectional streaming (``InvokeEndpointWithBidirectionalStream``) reaches the container as a
WebSocket on ``/invocations-bidirectional-stream`` on the serving port; the image declares it with the
label ``com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true``, and the platform pings the
socket and closes it when pongs stop coming (docs/streaming.md,
https://docs.aws.amazon.com/sdk-for-python/v1/reference/clients/sagemaker-runtime-http2/operations/invoke_endpoint_with_bidirectional_stream/).

The WebSocket protocol (handshake checks, framing, answering pings with pongs, the closing handshake) is
the ``websockets`` library's sans-I/O :class:`~websockets.server.ServerProtocol`, its documented API for
servers that own their sockets; :class:`WebSocketSession` is the :class:`asyncio.Protocol` that feeds it the
connection's bytes and writes what it produces. The HTTP server (:mod:`smkit.http1`) parses the upgrade
request and hands the connection over (:meth:`~smkit.serving.front.frontend.FrontEnd.upgraded`). That is the
smallest robust choice: the front end's own HTTP/1.1 parsing and bounds apply to the handshake, the
library keeps the RFC 6455 details, and a session is callbacks like a request (no ASGI, no task).

A session is queued like a request and runs in one model worker (:mod:`smkit.serving.worker.bidi`) until it
ends: messages from the client go to that worker as they arrive, the handler's messages come back the same
way. The handshake is answered once the worker has opened the session; a worker that cannot open it (no
``bidirectional_fn``) refuses it with its error status, a full queue with 503. While the client's
connection cannot take more, the worker's stream is paused (back-pressure).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from websockets.frames import Frame, Opcode
from websockets.http11 import Request as HandshakeRequest
from websockets.server import ServerProtocol

from smkit.http1 import Request, response_head
from smkit.serving.wire import messages
from smkit.serving.wire.reply import Reply, error_reply

if TYPE_CHECKING:
    from smkit.serving.front.pool import WorkerPool
    from smkit.serving.front.relay import StreamControl

MAX_MESSAGE = 16 * 1024 * 1024  # bytes of one message from the client; a larger one is closed with 1009
MAX_REASON = 120  # a close reason must fit a control frame (125 bytes)
CLOSE_TIMEOUT = 10.0  # seconds the client has to answer the closing handshake
# The front end's access-log line of a session, when it ends: path, status, start, session, error.
SessionLog = Callable[[str, int, float, "WebSocketSession", str | None], None]


class WebSocketSession(asyncio.Protocol):
    """One WebSocket session: the connection's protocol and the pool's recipient of the worker's frames."""

    def __init__(
        self,
        pool: WorkerPool,
        log_session: SessionLog,
        request: Request,
        transport: asyncio.Transport,
        rest: bytes,
    ) -> None:
        self.log_session = log_session
        self.path = request.path
        self.started = request.started
        self.transport = transport
        self.ws = ServerProtocol(max_size=MAX_MESSAGE)
        self.control: StreamControl | None = None
        self.pid = 0
        self.messages_in = self.messages_out = 0
        self.status = 101
        self.ended = False  # the worker's session has ended (or was refused)
        self.logged = False
        self._early = [rest] if rest else []  # bytes that came before the handshake was answered
        self._parts: list[bytes] = []  # a fragmented message being received
        self._text = False
        self._closer: asyncio.TimerHandle | None = None
        self._server = request.conn.server
        self._server.connections.add(self)  # stopped with the server's connections
        transport.set_protocol(self)
        # The library parses the handshake itself (its own checks); the head is given back to it as read.
        head = [request.method.encode("ascii"), b" ", request.target, b" HTTP/1.1\r\n"]
        for name, value in request.headers:
            head += [name, b": ", value, b"\r\n"]
        head.append(b"\r\n")
        self.ws.receive_data(b"".join(head))
        handshake = [event for event in self.ws.events_received() if isinstance(event, HandshakeRequest)]
        response = self.ws.accept(handshake[0]) if handshake else None
        if response is None or response.status_code != 101:  # not a valid WebSocket handshake
            self.ended = self.logged = True
            if response is not None:
                self.ws.send_response(response)
            self._flush()
            self.transport.close()
            return
        self._response = response
        try:
            refused = pool.accepting()
            if refused is not None:
                raise refused
            pool.submit("GET", messages.BIDI_PATH, request.headers, [], None, self)
        except Exception as exc:  # noqa: BLE001 - a refused handshake
            self.answer(None, error_reply(exc, debug=False), 0)

    # -- the worker's side (the pool calls these) ------------------------------------------------------
    def answer(self, token: Any, reply: Reply, pid: int) -> None:
        """The session could not open: refuse the handshake with the error's status and JSON body."""
        self.pid = pid
        self.ended = True
        self.status = reply.status
        if not self.transport.is_closing():
            headers = [(b"content-type", reply.content_type.encode("latin-1"))]
            head = response_head(reply.status, headers, length=len(reply.body), close=True)
            self.transport.write(head + reply.body)
            self.transport.close()
        self._log("refused")

    def stream_start(self, token: Any, reply: Reply, pid: int, control: StreamControl) -> None:
        """The worker opened the session: complete the handshake."""
        self.pid = pid
        self.control = control
        if self.transport.is_closing():
            control.cancel()
            return
        self.ws.send_response(self._response)
        self._flush()
        early, self._early = self._early, []
        for data in early:
            self.data_received(data)

    def stream_chunk(self, token: Any, data: bytes) -> None:
        """One message of the handler: kind byte + data."""
        if self.ended or self.transport.is_closing():
            return
        self.messages_out += 1
        if data[:1] == messages.TEXT:
            self.ws.send_text(data[1:])
        else:
            self.ws.send_binary(data[1:])
        self._flush()

    def stream_end(self, token: Any, error: str | None) -> None:
        """The handler returned (close 1000) or raised (1011 with the error)."""
        if self.ended:
            return
        self.ended = True
        if not self.transport.is_closing():
            code, reason = (1000, "") if error is None else (1011, error[:MAX_REASON])
            self.ws.send_close(code, reason)
            self._flush()
            if self.ws.close_expected() and not self.transport.is_closing():
                self._closer = asyncio.get_running_loop().call_later(CLOSE_TIMEOUT, self.transport.close)
        self._log(error)

    # -- the client's side -------------------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        if self.control is None:  # the handshake is not answered yet
            self._early.append(data)
            return
        self.ws.receive_data(data)
        for event in self.ws.events_received():
            if not isinstance(event, Frame):
                continue
            opcode = event.opcode
            if opcode is Opcode.TEXT or opcode is Opcode.BINARY:
                self._text = opcode is Opcode.TEXT
                self._parts = [bytes(event.data)]
            elif opcode is Opcode.CONT:
                self._parts.append(bytes(event.data))
            else:
                continue  # ping (answered by the library), pong, close
            if event.fin:
                self._message(b"".join(self._parts))
                self._parts = []
        self._flush()
        if self.ws.close_expected() and self._closer is None and not self.transport.is_closing():
            self._closer = asyncio.get_running_loop().call_later(CLOSE_TIMEOUT, self.transport.close)

    def _message(self, data: bytes) -> None:
        control = self.control
        if control is None or self.ended:
            return
        if self._text:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                self.ws.fail(1007, "a text message that is not UTF-8")
                return
        self.messages_in += 1
        control.send(messages.MESSAGE, (messages.TEXT if self._text else messages.BINARY) + data)

    def eof_received(self) -> bool | None:
        self.ws.receive_eof()
        self._flush()
        return None  # the transport closes

    def shutdown(self) -> None:
        """The server stops: close with 1012 (service restart); the worker's session is cancelled."""
        if self.control is None or self.ended:
            self.transport.close()
            return
        self.ended = True
        self.control.cancel()
        self.ws.send_close(1012, "the server is stopping")
        self._flush()
        self._closer = asyncio.get_running_loop().call_later(CLOSE_TIMEOUT, self.transport.close)
        self._log("the server stopped")

    def abort(self) -> None:
        self.transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self._server.closed(self)
        if self._closer is not None:
            self._closer.cancel()
        if not self.ended:
            self.ended = True
            if self.control is not None:
                self.control.cancel()  # the handler's messages end; it stops at its next item
            self._log("the connection ended before the session")

    def pause_writing(self) -> None:
        if self.control is not None and not self.ended:
            self.control.pause()  # the worker's writes wait: back-pressure up to the handler

    def resume_writing(self) -> None:
        if self.control is not None and not self.ended:
            self.control.resume()

    # -- helpers ---------------------------------------------------------------------------------------
    def _flush(self) -> None:
        transport = self.transport
        for data in self.ws.data_to_send():
            if transport.is_closing():
                return
            if data:
                transport.write(data)
            else:  # the library's end of the stream: the server closes the TCP connection
                transport.close()

    def _log(self, error: str | None) -> None:
        if not self.logged:
            self.logged = True
            self.log_session(self.path, self.status, self.started, self, error)
