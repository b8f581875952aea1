"""Streamed answers, worker side: a handler's iterator turned into chunks and sent as frames.

A hook (``transform_fn``, ``output_fn``, or ``predict_fn`` with the default ``output_fn``) may return an
iterator, a generator, an async iterator or an async generator, alone or as ``(stream, content_type)``.
The worker pulls the first item before it answers, so a handler that fails before its first item still
gets an ordinary error status; then it sends the head with that first chunk (``STRM``), every further
item as soon as it is produced (``CHNK``) and the end (``DONE``, with the error message when the handler
raised mid-stream). The front end writes each chunk to the client with chunked transfer encoding
(docs/streaming.md).

Items: ``bytes`` (or ``bytearray``/``memoryview``) are sent as they are, ``str`` as UTF-8, anything else
as one JSON document followed by a newline (JSON Lines). Empty items are skipped: an empty chunk would
end a chunked HTTP body.

The invocation deadline covers the whole stream, as SageMaker's ``ModelInvocationTimeExceeded`` does
("the model failed to finish sending the response within the timeout period",
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_runtime_ResponseStream.html). It is armed
around each step of the handler's iterator only, never around a frame being written, so a timeout can
never cut a frame in half.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from contextlib import AbstractContextManager
from functools import partial
from types import GeneratorType
from typing import Any

from smkit.serving.wire import ipc
from smkit.serving.wire.errors import message_of, timeout_error
from smkit.serving.wire.messages import CANCEL, CHUNK, DONE, STREAM, STREAM_JOB_ID
from smkit.serving.worker import codecs
from smkit.serving.worker.deadline import deadline

# Answers that are never streams, recognised without the (slower) ABC checks.
_PLAIN = frozenset({bytes, str, dict, list, tuple, int, float, bool, type(None), bytearray})


def is_stream(value: Any) -> bool:
    """True for what a hook returns to stream: an (async) iterator or generator, not str/bytes/containers."""
    kind = type(value)
    if kind in _PLAIN:
        return False
    return (
        kind is GeneratorType
        or isinstance(value, AsyncIterator)
        or (isinstance(value, Iterator) and not isinstance(value, str | bytes))
    )


def encode_item(item: Any) -> bytes:
    """One streamed item as bytes (see the module docstring)."""
    data = codecs.as_bytes(item)
    return data if data is not None else (codecs.encode_json(item) + "\n").encode("utf-8")


class Stream:
    """A hook's iterator and what must be in place while it runs (a multi-model handler's modules)."""

    __slots__ = ("source", "active")

    def __init__(self, source: Any, active: Callable[[], AbstractContextManager[None]] | None = None) -> None:
        self.source = source
        self.active = active

    def chunks(self, until: float) -> Generator[bytes, None, None]:
        """The non-empty encoded chunks; each step must end before ``until`` (``time.monotonic``)."""
        if isinstance(self.source, AsyncIterator):
            step, close = _async_steps(self.source)
        else:
            step, close = _sync_steps(iter(self.source))
        active = self.active or contextlib.nullcontext
        try:
            while True:
                with active(), self._step(until):
                    item = step()
                if item is _END:
                    return
                data = encode_item(item)
                if data:
                    yield data
        finally:
            if close is not None:
                with active(), contextlib.suppress(Exception):
                    close()  # the handler's finally blocks run now, not at garbage collection

    def _step(self, until: float) -> deadline:
        remaining = until - time.monotonic()
        if remaining <= 0:
            raise timeout_error(_state["timeout"])
        return deadline(remaining, _state["timeout"])


Steps = tuple[Callable[[], Any], Callable[[], object] | None]


def _sync_steps(source: Iterator[Any]) -> Steps:
    """The next item of ``source`` (``_END`` after the last) and how to close it early."""
    return partial(next, source, _END), getattr(source, "close", None)


def _async_steps(source: AsyncIterator[Any]) -> Steps:
    """:func:`_sync_steps` of an async iterator, run in the thread's event loop."""
    loop = event_loop()

    def step() -> Any:
        try:
            return loop.run_until_complete(source.__anext__())
        except StopAsyncIteration:
            return _END
        except BaseException:
            _cancel_pending(loop)  # a timeout left the step running inside the loop
            raise

    aclose = getattr(source, "aclose", None)
    return step, None if aclose is None else lambda: loop.run_until_complete(aclose())


_END = object()
_state: dict[str, Any] = {"timeout": 0.0}
_loops = threading.local()  # an event loop per thread: a worker may run streams side by side


def _cancel_pending(loop: asyncio.AbstractEventLoop) -> None:
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        with contextlib.suppress(BaseException):
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


def event_loop() -> asyncio.AbstractEventLoop:
    """The thread's event loop for async streams and sessions (created on first use, reused)."""
    loop: asyncio.AbstractEventLoop | None = getattr(_loops, "loop", None)
    if loop is None or loop.is_closed():
        loop = _loops.loop = asyncio.new_event_loop()
    return loop


class Cancels:
    """The front end's ``CANC`` frames on a worker's socket, read without blocking between chunks.

    Several streams may poll at once (a worker running requests side by side): reads take turns.
    """

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.frames = ipc.FrameReceiver()
        self.cancelled: set[int] = set()
        self.lock = threading.Lock()

    def poll(self, job_id: int) -> bool:
        """True when the front end has cancelled ``job_id``."""
        with self.lock:
            while True:
                try:
                    frames = self.frames.receive(self.sock, socket.MSG_DONTWAIT)
                except (BlockingIOError, InterruptedError):
                    break
                if frames is None:
                    break
                for tag, meta, _ in frames:
                    if tag == CANCEL:
                        self.cancelled.add(STREAM_JOB_ID.unpack(meta)[0])
            if not self.cancelled:
                return False
            cancelled = job_id in self.cancelled
            self.cancelled.discard(job_id)
            return cancelled

    def forget(self, job_id: int) -> None:
        """``job_id`` is over: a cancel that came too late for it is dropped."""
        if self.cancelled:
            with self.lock:
                self.cancelled.discard(job_id)


def send_stream(
    sock: socket.socket,
    cancels: Cancels,
    job_id: int,
    head: Callable[[], bytes],
    stream: Stream,
    until: float,
    timeout: float,
    on_error: Callable[[BaseException], tuple[bytes, bytes]],
) -> None:
    """Run ``stream`` and send its frames; ``head()`` gives the STRM metadata.

    ``on_error`` turns an exception raised before the first chunk into an ordinary reply frame's
    ``(meta, body)``: nothing has been sent then, so the client gets that error's status.
    """
    _state["timeout"] = timeout
    chunks = stream.chunks(until)
    try:
        first = next(chunks, b"")
    except Exception as exc:  # noqa: BLE001 - becomes the reply
        meta, body = on_error(exc)
        ipc.send_frame(sock, ipc.REPLY, meta, body)
        return
    ipc.send_frame(sock, STREAM, head(), first)
    ident = STREAM_JOB_ID.pack(job_id)
    error = b""
    try:
        for chunk in chunks:
            if cancels.poll(job_id):
                break
            ipc.send_frame(sock, CHUNK, ident, chunk)
    except Exception as exc:  # noqa: BLE001 - ends the stream with an error
        error = f"{type(exc).__name__}: {message_of(exc)}".encode("utf-8", "replace")
    finally:
        chunks.close()
    ipc.send_frame(sock, DONE, ident, error)
