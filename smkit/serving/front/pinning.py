"""Per-worker job queues: requests sent to one particular model worker.

The shared queue (:mod:`smkit.serving.wire.ipc`) gives each job to whichever worker is free. Every worker
slot also has a second ``SOCK_SEQPACKET`` socketpair that only that worker reads, with the same job
messages; a worker that reads it waits on both queues and takes its own first. Three kinds of job go there:

- a stateful session's requests, which must reach the worker that holds the session's state, and an
  adapter registration, which must reach every worker (:mod:`smkit.serving.front.sessions`,
  :mod:`smkit.serving.front.adapters`; workers whose handler takes part: ``FEATURE_PINNED``);
- any other request while a worker is idle: it goes to the idle worker that finished last (:meth:`Pinning.idle_slot`),
  whose caches (the model's pages, the CPU's) are the warmest. The kernel's queue hands jobs to its waiting
  readers in the order they started waiting, so at one caller two workers would take turns and each
  request would find the caches the other worker had just used. Workers that run one request at a time take
  part (``FEATURE_DISPATCH``); batching workers and workers running several requests at once
  (``SMKIT_WORKER_CONCURRENCY``) read the shared queue only.

The front end knows exactly when a worker is idle: it sees every reply on the worker's own socket. A
worker is idle when nothing sent to its own queue is unanswered and no job of the shared queue is
unanswered (the pool's count: a shared job may sit untaken or run in any worker). Otherwise a request goes
to the shared queue, so no request waits behind another in a busy worker's queue, and a worker that finishes
while requests wait takes the next one without waiting for the front end.

A worker that exits before taking a job sent to it: a dispatched job goes back to the shared queue (no
state went with it); a session's or adapter's is answered 500 here, as the state it was sent to died with
the worker.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections import defaultdict, deque
from collections.abc import Callable, Mapping
from typing import Any

from smkit.serving.front.relay import Job
from smkit.serving.wire import ipc
from smkit.serving.wire.errors import InferenceError
from smkit.serving.wire.messages import CONFIG_FD, FEATURE_ADAPTERS, FEATURE_DISPATCH, FEATURE_PINNED
from smkit.serving.wire.reply import error_reply


class Pinning:
    """The front end's ends of the per-worker queues, and what each ready worker supports."""

    def __init__(self) -> None:
        self.sockets: dict[int, socket.socket] = {}
        # Per slot, made once (send() is on every dispatched request's path): jobs waiting for room in the
        # slot's queue, and jobs sent there and not yet answered, by id.
        self.backlogs: defaultdict[int, deque[Job]] = defaultdict(deque)
        self.held: defaultdict[int, dict[int, Job]] = defaultdict(dict)
        self.dispatched: set[int] = set()  # ids of held jobs any worker could run (re-queued if untaken)
        self.dispatching: set[int] = set()  # ready slots whose worker takes dispatched jobs
        # Those of them holding no job of this module's, the most recently freed last.
        self.idle: list[int] = []
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

    def idle_slot(self) -> int | None:
        """The idle worker that finished last, if any (only meaningful while no shared job is unanswered)."""
        return self.idle[-1] if self.idle else None

    def send(self, slot: int, job: Job, dispatched: bool = False) -> bool:
        """Queue ``job`` for the worker in ``slot`` only; False (and ``job`` answered 500) when it is gone.

        ``dispatched``: any worker could run it (it goes back to the shared queue if this one exits first).
        The job's body file stays open until it is answered, for that.
        """
        sock = self.sockets.get(slot)
        if sock is None or slot not in self.features:
            error = InferenceError(f"the worker in slot {slot} is not running (it exited); retry")
            job.fail(error_reply(error, debug=False), os.getpid())
            _close(job)
            return False
        self.held[slot][job.id] = job
        if dispatched:
            self.dispatched.add(job.id)
        if self.idle and slot in self.idle:
            self.idle.remove(slot)
        backlog = self.backlogs[slot]
        if backlog or not _send(sock, job):
            backlog.append(job)
        return True

    def replied(self, slot: int, job_id: int) -> None:
        """The worker in ``slot`` answered ``job_id`` (from either queue): it can take the next of its waiting
        jobs, or it is the most recently freed worker."""
        held = self.held.get(slot)
        if held:
            job = held.pop(job_id, None)
            if job is not None:
                self.dispatched.discard(job_id)
                _close(job)
        backlog = self.backlogs.get(slot)
        sock = self.sockets.get(slot)
        while backlog and sock is not None:
            job = backlog[0]
            if job.answered:  # timed out while waiting here: never sent, so no worker will answer it
                backlog.popleft()
                if held:
                    held.pop(job.id, None)
                self.dispatched.discard(job.id)
                _close(job)
            elif _send(sock, job):
                backlog.popleft()
            else:
                break
        if not held and slot in self.dispatching and (not self.idle or self.idle[-1] != slot):
            if slot in self.idle:
                self.idle.remove(slot)
            self.idle.append(slot)

    def ready(self, slot: int, meta: Mapping[str, Any]) -> None:
        self.features[slot] = meta
        self.any_adapters = self.any_adapters or bool(meta.get(FEATURE_ADAPTERS))
        if meta.get(FEATURE_DISPATCH):
            self.dispatching.add(slot)
            if not self.held.get(slot) and slot not in self.idle:
                # A new worker is the least recently used: the others' caches are the warm ones.
                self.idle.insert(0, slot)

    def exited(self, slot: int, jobs: dict[int, Job], pid: int, requeue: Callable[[Job], None]) -> None:
        """The worker in ``slot`` is gone: dispatched jobs it had not taken go to ``requeue`` (the shared
        queue), the others sent to it fail; forget what it supported."""
        self.features.pop(slot, None)
        self.dispatching.discard(slot)
        if slot in self.idle:
            self.idle.remove(slot)
        self.backlogs.pop(slot, None)
        held = self.held.pop(slot, {})
        for job_id in sorted(held):
            if job_id in self.dispatched:
                self.dispatched.discard(job_id)
                if job_id in jobs and not held[job_id].answered:
                    requeue(held[job_id])  # not taken (a taken one was answered from the scoreboard)
                    continue
            _close(held[job_id])
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
    return True


def _close(job: Job) -> None:
    if job.fd >= 0:
        with contextlib.suppress(OSError):
            os.close(job.fd)
        job.fd = -1
