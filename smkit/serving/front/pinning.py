"""Per-worker job queues: requests that must reach one particular model worker.

The shared queue (:mod:`smkit.serving.wire.ipc`) gives each job to whichever worker is free. Two kinds of
request cannot go that way: a stateful session's requests must reach the worker that holds the
session's state, and an adapter registration must reach every worker (:mod:`smkit.serving.front.sessions`,
:mod:`smkit.serving.front.adapters`). For those, every worker slot has a second ``SOCK_SEQPACKET`` socketpair
that only that worker reads, with the same job messages as the shared queue. A worker reads it only when
its handler takes part (stateful sessions enabled, or adapter hooks defined; it says so in its ``REDY``
frame): every other worker's loop is the plain blocking read it always was.

A job sent to a worker that exits before answering is answered 500 here: the state it was sent to
(the session, the adapter set) died with the worker.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from smkit.serving.front.relay import Job
from smkit.serving.wire import ipc
from smkit.serving.wire.errors import InferenceError
from smkit.serving.wire.messages import CONFIG_FD, FEATURE_ADAPTERS, FEATURE_PINNED
from smkit.serving.wire.reply import error_reply


class Pinning:
    """The front end's ends of the per-worker queues, and what each ready worker supports."""

    def __init__(self) -> None:
        self.sockets: dict[int, socket.socket] = {}
        self.backlogs: dict[int, deque[Job]] = {}
        self.held: dict[int, set[int]] = {}  # slot -> ids of jobs sent there and not yet answered
        self.features: dict[int, Mapping[str, Any]] = {}  # slot -> its REDY metadata, while ready
        self.on_exit: list[Callable[[int], None]] = []  # called with the slot of a worker that exited
        self.any_adapters = False  # some worker has served the adapter API
        self.config: dict[str, Any] = {}  # added to each new worker's configuration (registered adapters)

    def open(self, slot: int) -> int:
        """A new queue for the worker about to start in ``slot``; returns the worker's end (a descriptor)."""
        old = self.sockets.pop(slot, None)
        if old is not None:
            old.close()
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        parent.setblocking(False)
        self.sockets[slot] = parent
        return child.detach()

    def worker_config(self, slot: int, fd: int) -> dict[str, Any]:
        """What a new worker is told: its queue's descriptor and :attr:`config` as it is now."""
        return {**{key: dict(value) for key, value in self.config.items()}, CONFIG_FD: fd}

    def ready_slots(self, feature: str = FEATURE_PINNED) -> list[int]:
        """Slots whose worker is ready and reads its own queue (and has ``feature``)."""
        return sorted(slot for slot, meta in self.features.items() if meta.get(feature))

    def send(self, slot: int, job: Job) -> bool:
        """Queue ``job`` for the worker in ``slot`` only; False (and ``job`` answered 500) when it is gone."""
        sock = self.sockets.get(slot)
        if sock is None or slot not in self.features:
            error = InferenceError(f"the worker in slot {slot} is not running (it exited); retry")
            job.fail(error_reply(error, debug=False), os.getpid())
            _close(job)
            return False
        self.held.setdefault(slot, set()).add(job.id)
        backlog = self.backlogs.setdefault(slot, deque())
        if backlog or not _send(sock, job):
            backlog.append(job)
        return True

    def replied(self, slot: int, job_id: int) -> None:
        """The worker in ``slot`` answered ``job_id``: it can take the next of its waiting jobs."""
        held = self.held.get(slot)
        if held:
            held.discard(job_id)
        backlog = self.backlogs.get(slot)
        sock = self.sockets.get(slot)
        while backlog and sock is not None:
            job = backlog[0]
            if job.answered:  # timed out while waiting here
                backlog.popleft()
                _close(job)
            elif _send(sock, job):
                backlog.popleft()
            else:
                return

    def ready(self, slot: int, meta: Mapping[str, Any]) -> None:
        self.features[slot] = meta
        self.any_adapters = self.any_adapters or bool(meta.get(FEATURE_ADAPTERS))

    def exited(self, slot: int, jobs: dict[int, Job], pid: int) -> None:
        """The worker in ``slot`` is gone: fail what was sent to it, forget what it supported."""
        self.features.pop(slot, None)
        for waiting in self.backlogs.pop(slot, deque()):
            _close(waiting)
        for job_id in sorted(self.held.pop(slot, set())):
            job = jobs.pop(job_id, None)
            if job is not None:
                error = InferenceError(
                    f"the worker process {pid} that held this request's session or adapter state exited "
                    "before answering; the state is gone (create the session again)"
                )
                job.fail(error_reply(error, debug=False), pid)
        for listener in self.on_exit:
            listener(slot)


def _send(sock: socket.socket, job: Job) -> bool:
    try:
        ipc.send_job(sock, job.message, job.fd)
    except BlockingIOError:
        return False
    _close(job)
    return True


def _close(job: Job) -> None:
    if job.fd >= 0:
        with contextlib.suppress(OSError):
            os.close(job.fd)
        job.fd = -1
