"""Bidirectional streaming, front-end side: ``/invocations-bidirectional-stream`` over WebSocket.

SageMaker's bidirectional streaming (``InvokeEndpointWithBidirectionalStream``) reaches the container as a
WebSocket on ``/invocations-bidirectional-stream`` on the serving port; the image declares it with the
label ``com.amazonaws.sagemaker.capabilities.bidirectional-streaming=true``, and the platform pings the
socket and closes it when pongs stop coming (docs/streaming.md,
https://docs.aws.amazon.com/sdk-for-python/v1/reference/clients/sagemaker-runtime-http2/operations/invoke_endpoint_with_bidirectional_stream/). The WebSocket
protocol itself (handshake, framing, answering pings with pongs, close) is uvicorn's implementation on the
``websockets`` library; :class:`~smkit.serving.protocol.FrontEndProtocol` hands the upgraded connection to
it, and it calls :func:`serve` as an ASGI app.

A session is queued like a request and runs in one model worker (:mod:`smkit.serving.bidi`) until it
ends: messages from the client go to that worker as they arrive, the handler's messages come back the same
way. A worker that cannot open the session (no ``bidirectional_fn``) refuses the handshake with its
error status; a full queue refuses it with 503.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any

from smkit.serving import bidi, streams
from smkit.serving.errors import InferenceError
from smkit.serving.handler import Reply, error_reply

if TYPE_CHECKING:
    from smkit.serving.frontend import FrontEnd
    from smkit.serving.relay import StreamControl

# The worker's socket is paused while this many messages wait for a slow client (back-pressure).
HIGH_WATER = 64
LOW_WATER = 16
MAX_REASON = 120  # a close reason must fit a control frame (125 bytes)
ASGI = dict[str, Any]


class Session:
    """One WebSocket session as the pool's recipient: what its worker sends, in order, in ``outbox``."""

    def __init__(self) -> None:
        self.outbox: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self.control: StreamControl | None = None
        self.pid = 0
        self.messages_in = self.messages_out = 0

    def answer(self, token: Any, reply: Reply, pid: int) -> None:
        self.pid = pid
        self.outbox.put_nowait(("refuse", reply))

    def stream_start(self, token: Any, reply: Reply, pid: int, control: StreamControl) -> None:
        self.pid = pid
        self.control = control
        self.outbox.put_nowait(("accept", None))

    def stream_chunk(self, token: Any, data: bytes) -> None:
        self.outbox.put_nowait(("message", data))
        if self.outbox.qsize() >= HIGH_WATER and self.control is not None:
            self.control.pause()

    def stream_end(self, token: Any, error: str | None) -> None:
        self.outbox.put_nowait(("end", error))


async def serve(front: FrontEnd, scope: ASGI, receive: Any, send: Any) -> None:
    """The ASGI app of an upgraded connection (uvicorn's WebSocket protocol calls it)."""
    started = time.perf_counter()
    if scope["type"] != "websocket" or scope["path"] != bidi.BIDI_PATH:
        await _refuse(send, InferenceError(f"no WebSocket at {scope.get('path')!r}", status_code=404))
        return
    await receive()  # websocket.connect
    session = Session()
    try:
        refused = front.pool.accepting()
        if refused is not None:
            raise refused
        front.pool.submit("GET", bidi.BIDI_PATH, list(scope["headers"]), [], None, session)
    except Exception as exc:  # noqa: BLE001 - a refused handshake
        await _refuse(send, exc)
        return
    kind, value = await session.outbox.get()
    if kind == "refuse":
        await _refuse(send, value)
        front.log_session(scope["path"], value.status, started, session, "refused")
        return
    inbound: asyncio.Future[None] | None = None
    error: str | None = None
    finished = False  # the worker's session has ended
    try:
        await send({"type": "websocket.accept"})
        inbound = asyncio.ensure_future(_inbound(receive, session))
        error = await _outbound(send, session)
        finished = True
    finally:
        if inbound is not None:
            inbound.cancel()
        if not finished and session.control is not None:
            session.control.cancel()  # the client left during the handshake, or the server is stopping
            error = "the connection ended before the session"
        front.log_session(scope["path"], 101, started, session, error)


async def _outbound(send: Any, session: Session) -> str | None:
    while True:
        kind, value = await session.outbox.get()
        if kind == "message":
            if session.outbox.qsize() <= LOW_WATER and session.control is not None:
                session.control.resume()
            session.messages_out += 1
            payload = bidi.decode_message(value)
            field = "text" if isinstance(payload, str) else "bytes"
            with contextlib.suppress(OSError):  # the client is gone: its disconnect ends the session
                await send({"type": "websocket.send", field: payload})
        elif kind == "end":
            code, reason = (1000, "") if value is None else (1011, value[:MAX_REASON])
            with contextlib.suppress(OSError):
                await send({"type": "websocket.close", "code": code, "reason": reason})
            return value


async def _inbound(receive: Any, session: Session) -> None:
    while True:
        message = await receive()
        control = session.control
        if message["type"] == "websocket.disconnect":
            if control is not None:
                control.cancel()  # the handler's messages end; it stops at its next item
            return
        if control is not None:
            session.messages_in += 1
            text = message.get("text")
            body = bidi.TEXT + text.encode("utf-8") if text is not None else bidi.BINARY + message["bytes"]
            control.send(streams.MESSAGE, body)


async def _refuse(send: Any, exc: BaseException | Reply) -> None:
    """Refuse the handshake with an HTTP error answer (status and JSON body)."""
    reply = exc if isinstance(exc, Reply) else error_reply(exc, debug=False)
    headers = [(b"content-type", reply.content_type.encode("latin-1"))]
    await send({"type": "websocket.http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "websocket.http.response.body", "body": reply.body})
