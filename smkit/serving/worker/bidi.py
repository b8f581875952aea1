"""Bidirectional streaming, worker side: one WebSocket session runs the model's ``bidirectional_fn``.

The front end (:mod:`smkit.serving.front.websocket`) queues a session like a request (path
:data:`~smkit.serving.wire.messages.BIDI_PATH`); the worker that takes it calls ``bidirectional_fn(model, messages[, context])``, which
must return an async iterator (an ``async def`` with ``yield``). ``messages`` is an async iterator of
what the client sends (``str`` for text frames, ``bytes`` for binary ones); it ends when the client closes.
Every item the handler yields is sent at once: ``str`` as a text frame, ``bytes`` as a binary frame,
anything else as JSON text. The session ends when the handler returns (the front end closes the
WebSocket normally) or raises (closed with 1011 and the error). The worker serves that session only, for
as long as it lasts: the invocation timeout does not apply (docs/streaming.md).

Frames: the front end sends ``MESG`` (job id; body = kind byte + data) and ``CANC`` when the client has
gone; the worker answers ``STRM`` (session accepted), ``CHNK`` per message out (kind byte + data) and
``DONE``, or one ``RPLY`` error when the session cannot start (no ``bidirectional_fn``).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

from smkit.serving.wire import ipc, messages
from smkit.serving.wire.errors import InferenceError, message_of
from smkit.serving.wire.messages import BINARY, TEXT
from smkit.serving.worker import codecs, streams


def encode_message(item: Any) -> bytes:
    """A yielded item as kind byte + data."""
    if isinstance(item, str):
        return TEXT + item.encode("utf-8")
    if isinstance(item, bytes | bytearray | memoryview):
        return BINARY + bytes(item)
    return TEXT + codecs.encode_json(item).encode("utf-8")


def decode_message(body: bytes) -> str | bytes:
    """Kind byte + data -> what ``messages`` yields."""
    data = memoryview(body)[1:]
    return str(data, "utf-8") if body[:1] == TEXT else bytes(data)


async def _messages(inbox: asyncio.Queue[bytes | None]) -> AsyncIterator[str | bytes]:
    while True:
        body = await inbox.get()
        if body is None:
            return
        yield decode_message(body)


def serve_session(
    sock: socket.socket,
    cancels: streams.Cancels,
    job_id: int,
    open_session: Callable[[AsyncIterator[str | bytes]], Any],
    head: Callable[[], bytes],
    on_error: Callable[[BaseException], tuple[bytes, bytes]],
    start: Callable[[float], None],
) -> None:
    """Run one session: ``open_session(messages)`` is the handler's iterator; ``start(deadline)`` marks the
    job on the scoreboard (no deadline: a session lasts as long as the client keeps it open)."""
    inbox: asyncio.Queue[bytes | None] = asyncio.Queue()
    try:
        source = open_session(_messages(inbox))
        if not isinstance(source, AsyncIterator):
            raise InferenceError(
                f"bidirectional_fn returned {type(source).__name__}; it must be an async generator "
                "(async def bidirectional_fn(model, messages): async for m in messages: yield ...)"
            )
    except Exception as exc:  # noqa: BLE001 - becomes the refusal
        meta, body = on_error(exc)
        ipc.send_frame(sock, ipc.REPLY, meta, body)
        return
    start(math.inf)
    ipc.send_frame(sock, messages.STREAM, head())
    error = streams.event_loop().run_until_complete(_run(sock, cancels, job_id, source, inbox))
    ipc.send_frame(sock, messages.DONE, messages.STREAM_JOB_ID.pack(job_id), error)


async def _run(
    sock: socket.socket,
    cancels: streams.Cancels,
    job_id: int,
    source: AsyncIterator[Any],
    inbox: asyncio.Queue[bytes | None],
) -> bytes:
    loop = asyncio.get_running_loop()
    ident = messages.STREAM_JOB_ID.pack(job_id)
    gone = asyncio.Event()

    def readable() -> None:
        try:
            frames = cancels.frames.receive(sock)
        except (BlockingIOError, InterruptedError):
            return
        if frames is None:
            gone.set()
            inbox.put_nowait(None)
            return
        for tag, meta, body in frames:
            if messages.STREAM_JOB_ID.unpack_from(meta)[0] != job_id:
                continue  # a cancel of an earlier stream, already over
            if tag == messages.MESSAGE:
                inbox.put_nowait(body)
            elif tag == messages.CANCEL:
                gone.set()
                inbox.put_nowait(None)

    sock.setblocking(False)
    loop.add_reader(sock.fileno(), readable)
    error = b""
    try:
        async for item in source:
            if gone.is_set():
                break
            await loop.sock_sendall(sock, ipc.frame(messages.CHUNK, ident, encode_message(item)))
    except Exception as exc:  # noqa: BLE001 - ends the session with an error
        error = f"{type(exc).__name__}: {message_of(exc)}".encode("utf-8", "replace")
    finally:
        loop.remove_reader(sock.fileno())
        aclose = getattr(source, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()
        sock.setblocking(True)
    return error
