"""Several requests at once in one model worker: ``SMKIT_WORKER_CONCURRENCY`` above 1.

For a handler that waits on I/O (a feature store, another endpoint, S3), one request per worker process
leaves the CPU idle while every worker waits. Setting ``SMKIT_WORKER_CONCURRENCY=N`` declares that the
model's hooks may run side by side, and each worker then runs up to N requests at once:

- The main thread takes the next job off the queue whenever fewer than N of the worker's requests are
  running, into the scoreboard slot of a free thread (the front end gives every worker N slots, so it knows
  each job a worker holds, as with one: smkit/serving/wire/ipc.py), and hands it to that thread. Whichever
  worker has a free thread takes the next request.
- Each request runs on its thread exactly as a lone request runs on the main thread: the same routes,
  the same replies and streams. Frames to the front end are written whole, one at a time.
- ``async def`` hooks are awaited on the worker's one event loop (smkit/serving/worker/awaiting.py): the waits
  of all the requests in flight overlap there, and a request's deadline cancels its coroutine.
- Deadlines: a watchdog raises the invocation timeout in a request's thread at its deadline
  (smkit/serving/worker/deadline.py); the front end answers 504 at the deadline in any case, and replaces the
  worker only when every one of its threads is stuck past the deadline and the grace period.
- A bidirectional-streaming session runs alone: the worker lets its requests in flight finish, serves the
  session, then goes on (a session reads the worker's socket, which the requests' streams share).
- SIGTERM: no job is taken any more, the requests in hand finish, then the worker exits.

CPU-bound handlers keep the default of 1: threads of one process share one interpreter lock.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from queue import SimpleQueue
from typing import Any

from smkit.serving.wire import ipc, messages
from smkit.serving.worker import deadline

Received = tuple[ipc.JobMeta, bytes]


class FrameSocket:
    """The worker's socket as the request threads write to it: each frame whole, one at a time."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.lock = threading.Lock()

    def sendmsg(self, buffers: Sequence[bytes]) -> int:
        """Send every buffer (one frame) before another thread may send: returns their whole length."""
        views = [memoryview(b).cast("B") for b in buffers]
        total = sum(len(v) for v in views)
        with self.lock:
            sent = self.sock.sendmsg(views)
            for view in views:
                if sent >= len(view):
                    sent -= len(view)
                    continue
                self.sock.sendall(view[sent:])
                sent = 0
        return total

    def sendall(self, data: bytes) -> None:
        with self.lock:
            self.sock.sendall(data)


class _Stopping:
    """SIGTERM: stop taking jobs (the main thread's wait for the next one wakes up), finish those in hand."""

    def __init__(self) -> None:
        self.requested = False
        self.wake_read, self.wake_write = os.pipe()
        os.set_blocking(self.wake_write, False)

    def on_term(self, signum: int, frame: Any) -> None:
        self.requested = True
        with contextlib.suppress(BlockingIOError):  # already woken
            os.write(self.wake_write, b"x")


def serve(
    queue: ipc.JobReader,
    own: ipc.JobReader | None,
    board: ipc.Scoreboard,
    slots: range,
    runners: Mapping[int, Callable[[Received], None]],
) -> None:
    """Take jobs off ``queue`` (and the worker's ``own`` queue, first) while one of ``slots`` is free and
    run each with ``runners[slot]`` on a thread of its own; return once the queue closes or SIGTERM came
    and every request in hand is answered."""
    stopping = _Stopping()
    signal.signal(signal.SIGTERM, stopping.on_term)
    deadline.watch_threads()
    free: SimpleQueue[int] = SimpleQueue()
    for slot in slots:
        free.put(slot)
    threads = ThreadPoolExecutor(len(slots), thread_name_prefix="smkit-request")

    def run(slot: int, received: Received) -> None:
        try:
            runners[slot](received)
        finally:
            free.put(slot)

    try:
        while not stopping.requested:
            slot = free.get()
            received = _next_job(queue, own, board.landing(slot), stopping)
            if received is None:
                free.put(slot)
                return
            (_, _, _, method, path, _), _ = received
            if path == messages.BIDI_PATH and method == "GET":
                # A session reads the socket the streams in flight poll for cancels: it runs alone.
                others = [free.get() for _ in range(len(slots) - 1)]
                run(slot, received)
                for other in others:
                    free.put(other)
            else:
                threads.submit(run, slot, received)
    finally:
        threads.shutdown(wait=True)


def _next_job(
    queue: ipc.JobReader, own: ipc.JobReader | None, landing: memoryview, stopping: _Stopping
) -> Received | None:
    """The next job (the worker's own queue first), its id landing in ``landing``; None: the queue closed
    or SIGTERM came."""
    watched: list[Any] = [queue.sock, stopping.wake_read]
    if own is not None:
        watched.insert(0, own.sock)
    while not stopping.requested:
        readable, _, _ = select.select(watched, [], [])
        if stopping.wake_read in readable:
            return None
        if own is not None and own.sock in readable:
            return own.read(landing)
        try:
            return queue.read(landing, flags=socket.MSG_DONTWAIT)
        except BlockingIOError:
            continue  # another worker took it first
    return None
