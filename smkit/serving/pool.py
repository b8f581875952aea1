"""The model-worker pool of the front end: fresh worker processes, one shared bounded queue, deadlines.

Every worker is a new interpreter (``python -m smkit.serving.model_worker``) that loads the model
itself: nothing is forked from a process that has loaded a library, so OpenMP or CUDA thread pools are
always created in the process that uses them. Requests wait in one FIFO queue that every worker reads
(the kernel's: :mod:`smkit.serving.ipc`); whichever worker is free takes the next one. At most
``queue_size`` requests wait beyond one per worker (then 503). A worker runs one request at a time.

Deadlines (``SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS``): the client gets 504 when its request has run
that long in a worker (the worker's own SIGALRM interrupts Python code at that moment; a sweep of the
scoreboard catches the rest within a tenth of the limit); a worker that has not answered ``kill_grace``
seconds after the deadline (stuck in C code, signals blocked) is killed and replaced. A request that
waited longer than InvokeEndpoint's 60 s (or the timeout, if longer) in the queue gets 504 without
running. A worker that dies mid-request answers its client 500 and is replaced. See
docs/serving-runtime.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import signal
import socket
import subprocess
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from smkit.process import describe_exit, signal_process
from smkit.serving import ipc, relay, streams
from smkit.serving.deadline import timeout_error
from smkit.serving.env import VAR_WORKER_CONFIG
from smkit.serving.errors import InferenceError, ModelNotReady
from smkit.serving.handler import Reply, error_reply

log = logging.getLogger("smkit.serving")
WORKER_MODULE = "smkit.serving.model_worker"
STARTING, READY, DEAD = "starting", "ready", "dead"
MAX_BACKOFF_SECONDS = 30.0
INVOKE_ENDPOINT_SECONDS = 60.0  # docs/hosting-contract.md
# The scoreboard is swept this often while requests are outstanding (a tenth of the timeout when that
# is shorter, never more often than every 10 ms): one timer for all requests instead of one per request.
MAX_SWEEP_SECONDS = 1.0
MIN_SWEEP_SECONDS = 0.01
QUEUE_BUFFER_BYTES = 4 * 1024 * 1024  # the kernel caps it at net.core.wmem_max; the backlog holds the rest


class QueueFull(InferenceError):
    """Every worker is busy and the queue holds ``queue_size`` requests (503)."""

    status_code = 503
    error_type = "ServiceUnavailable"


@dataclass(frozen=True)
class PoolOptions:
    """How to run the workers.

    Attributes:
        workers: worker processes (``SAGEMAKER_MODEL_SERVER_WORKERS``).
        python: the interpreter that runs them (``SMKIT_WORKER_PYTHON``, default ``sys.executable``).
        config: what to serve, passed to every worker as JSON (see smkit/serving/model_worker.py).
        timeout: seconds a request may run in a worker.
        queue_size: requests that may wait for a free worker.
        environ: the workers' environment.
        kill_grace: seconds after the deadline before a worker that has not answered is killed.
        load_grace: extra seconds a request may take when it loads a model (multi-model mode).
    """

    workers: int
    python: str
    config: Mapping[str, Any]
    timeout: float
    queue_size: int
    environ: Mapping[str, str]
    kill_grace: float = 2.0
    load_grace: float = 0.0


class Job:
    """One request waiting for or running in a worker."""

    __slots__ = ("message", "fd", "token", "recipient", "queued_at", "answered", "control")

    def __init__(
        self, message: bytes, fd: int, token: Any, recipient: relay.Recipient, queued_at: float
    ) -> None:
        self.message = message  # the job's message on the queue
        self.fd = fd  # the file holding a large body (-1: none), closed once sent
        self.token = token
        self.recipient = recipient
        self.queued_at = queued_at
        self.answered = False
        self.control: relay.StreamControl | None = None  # set while its reply streams

    def answer(self, reply: Reply, pid: int) -> None:
        if not self.answered:
            self.answered = True
            self.recipient.answer(self.token, reply, pid)

    def fail(self, reply: Reply, pid: int) -> None:
        """Answer with an error; a stream already under way ends with it (the client sees it cut off)."""
        control = self.control
        if control is None:
            self.answer(reply, pid)
            return
        self.control = None
        control.cancel()
        self.recipient.stream_end(self.token, reply.body.decode("utf-8", "replace"))


@dataclass(eq=False)
class Worker:
    """One worker process and the front end's end of its socket."""

    slot: int
    proc: subprocess.Popen[bytes]
    state: str = STARTING
    load_failed: bool = False
    killed: bool = False


class _Channel(asyncio.Protocol):
    def __init__(self, pool: WorkerPool, worker: Worker) -> None:
        self.pool = pool
        self.worker = worker
        self.buffer = ipc.FrameBuffer()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        for tag, meta, body in self.buffer.feed(data):
            self.pool.on_frame(self, tag, meta, body)

    def connection_lost(self, exc: Exception | None) -> None:
        self.pool.on_lost(self.worker)


class WorkerPool:
    """Workers, the queue and the deadlines; lives on the front end's event loop."""

    def __init__(self, options: PoolOptions) -> None:
        self.options = options
        self.workers: list[Worker | None] = [None] * options.workers
        self.jobs: dict[int, Job] = {}  # sent and not yet replied: waiting in the queue or running
        self.backlog: deque[Job] = deque()  # not yet taken by the kernel queue (its buffer was full)
        self.load_error: str | None = None
        self.latched = False  # every worker was ready once: /ping stays 200 through replacements
        self.closing = False
        self._failures = [0] * options.workers
        self._loop: asyncio.AbstractEventLoop | None = None
        self._launched: list[tuple[Worker, socket.socket]] = []
        self._ids = itertools.count(1)
        self._queue, self._queue_out = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._queue_out.setblocking(False)
        with contextlib.suppress(OSError):
            self._queue_out.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, QUEUE_BUFFER_BYTES)
        self.board = ipc.Scoreboard.create(options.workers)
        self._sweeper: asyncio.TimerHandle | None = None
        self._sweep_every = max(MIN_SWEEP_SECONDS, min(MAX_SWEEP_SECONDS, options.timeout / 10))
        # After InvokeEndpoint's 60 s the caller has its answer: running the request then is wasted work.
        self.max_queue_wait = max(options.timeout, INVOKE_ENDPOINT_SECONDS)
        # A job no worker has reported by then was taken by a worker that died before saying so.
        self._lost_after = self.max_queue_wait + options.timeout + options.load_grace + 2 * options.kill_grace

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    # -- state ---------------------------------------------------------------------------------------
    def ready_count(self) -> int:
        return sum(1 for w in self.workers if w is not None and w.state == READY)

    def not_ready(self) -> ModelNotReady | None:
        """Why the server cannot take requests now, or None.

        Before every worker has loaded once: still loading, or the load error. After that, a worker
        being replaced does not count (SageMaker replaces an instance whose pings fail); only a pool with
        no ready worker whose last load failed is not ready.
        """
        ready = self.ready_count()
        if not self.latched:
            if self.load_error is not None:
                return ModelNotReady(f"the model failed to load: {self.load_error}")
            if ready >= self.options.workers:
                self.latched = True
                return None
            return ModelNotReady("the model is still loading")
        if ready == 0 and self.load_error is not None:
            return ModelNotReady(f"no worker is ready; the model failed to load: {self.load_error}")
        return None

    def accepting(self) -> ModelNotReady | None:
        """Why a request cannot be queued now (None: it can)."""
        if self.latched or (self.load_error is None and self.ready_count() > 0):
            return None
        return self.not_ready()

    # -- requests ------------------------------------------------------------------------------------
    def submit(
        self,
        method: str,
        path: str,
        headers: ipc.RawHeaders,
        body: bytes,
        token: Any,
        recipient: relay.Recipient,
    ) -> None:
        """Queue one request; ``recipient.answer(token, reply, worker pid)`` follows. Raises QueueFull."""
        if len(self.jobs) >= self.options.workers + self.options.queue_size:
            waiting = len(self.jobs) - self.options.workers
            raise QueueFull(
                f"all {self.options.workers} workers are busy and {waiting} requests are waiting "
                "(the queue is full); retry later, add workers (SAGEMAKER_MODEL_SERVER_WORKERS) or "
                "raise SMKIT_QUEUE_SIZE"
            )
        job_id = next(self._ids)
        now = time.monotonic()
        message, fd = ipc.job_message(job_id, now, method, path, headers, body)
        job = Job(message, fd, token, recipient, now)
        self.jobs[job_id] = job
        if self.backlog or not self._send(job):
            self.backlog.append(job)
        if self._sweeper is None:
            self._sweeper = self.loop.call_later(self._sweep_every, self._sweep)

    def _send(self, job: Job) -> bool:
        try:
            ipc.send_job(self._queue_out, job.message, job.fd)
        except BlockingIOError:
            return False
        if job.fd >= 0:
            os.close(job.fd)
            job.fd = -1
        return True

    def _flush_backlog(self) -> None:
        while self.backlog and self._send(self.backlog[0]):
            self.backlog.popleft()

    def _sweep(self) -> None:
        """Deadlines: 504 for a job past its time, kill its worker after the grace, drop lost jobs."""
        now = time.monotonic()
        for worker in self.workers:
            if worker is None or worker.state != READY:
                continue
            job_id, deadline = self.board.read(worker.slot)
            job = self.jobs.get(job_id) if job_id else None
            if job is None or now < deadline:
                continue
            job.fail(error_reply(timeout_error(self.options.timeout), debug=False), worker.proc.pid)
            if now >= deadline + self.options.kill_grace and not worker.killed:
                self._kill(worker)
        for job_id, job in list(self.jobs.items()):
            # A job streaming its reply (or a bidirectional session) is alive: its worker sends frames.
            if job.control is None and now - job.queued_at > self._lost_after:
                del self.jobs[job_id]
                job.fail(error_reply(timeout_error(self.options.timeout), debug=False), os.getpid())
        self._flush_backlog()
        self._sweeper = self.loop.call_later(self._sweep_every, self._sweep) if self.jobs else None

    def _kill(self, worker: Worker) -> None:
        log.warning(
            "worker %d did not return %.0f s after the %g s deadline (stuck outside Python code?): "
            "killing and replacing it",
            worker.proc.pid,
            self.options.kill_grace,
            self.options.timeout,
        )
        worker.killed = True
        signal_process(worker.proc, signal.SIGKILL)

    # -- frames from workers -------------------------------------------------------------------------
    def on_frame(self, channel: _Channel, tag: bytes, data: bytes, body: bytes) -> None:
        if tag == ipc.REPLY:
            job_id, status, content_type, headers, pid = ipc.parse_reply(data)
            job = self.jobs.pop(job_id, None)
            if job is not None:
                job.answer(Reply(status, body, content_type, headers), pid)
            if self.backlog:
                self._flush_backlog()
            return
        if tag in relay.STREAM_TAGS:
            relay.stream_frame(self.jobs, channel, tag, data, body)
            if tag == streams.DONE and self.backlog:
                self._flush_backlog()
            return
        worker = channel.worker
        meta = json.loads(data)
        if tag == ipc.READY:
            if meta["ok"]:
                self._failures[worker.slot] = 0
                self.load_error = None
                worker.state = READY
                self._flush_backlog()
            else:
                worker.load_failed = True
                self.load_error = str(meta["error"])

    def on_lost(self, worker: Worker) -> None:
        previous, worker.state = worker.state, DEAD
        self.loop.create_task(self._reap(worker, previous))

    async def _reap(self, worker: Worker, previous: str) -> None:
        status = await self.loop.run_in_executor(None, worker.proc.wait)
        if self.workers[worker.slot] is worker:
            self.workers[worker.slot] = None
        job_id, _ = self.board.read(worker.slot)
        self.board.finish(worker.slot)
        job = self.jobs.pop(job_id, None) if job_id else None
        if job is not None:
            job.fail(
                error_reply(
                    InferenceError(
                        f"the worker process exited ({describe_exit(status)}) while handling this "
                        "request; it is being replaced"
                    ),
                    debug=False,
                ),
                worker.proc.pid,
            )
        if self.closing:
            return
        if previous == STARTING:
            if self.load_error is None:
                self.load_error = f"the worker exited ({describe_exit(status)}) while loading the model"
            if not self.latched:
                return  # the first load failed: /ping reports it, no restart loop
            self._failures[worker.slot] += 1
            delay = min(MAX_BACKOFF_SECONDS, 2.0 ** (self._failures[worker.slot] - 1))
            log.error("worker load failed (%s); retrying in %.0f s", self.load_error, delay)
            await asyncio.sleep(delay)
            if self.closing:
                return
        else:
            log.warning(
                "worker %d exited (%s); starting a replacement", worker.proc.pid, describe_exit(status)
            )
        self._spawn(worker.slot)

    # -- processes -----------------------------------------------------------------------------------
    def launch(self) -> None:
        """Start every worker process now (they load in parallel while the front end starts)."""
        for slot in range(self.options.workers):
            self._launched.append(self._popen(slot))

    async def start(self) -> None:
        """Connect to the launched workers (:meth:`not_ready` says when they have loaded)."""
        launched, self._launched = self._launched, []
        for worker, sock in launched:
            await self._connect(worker, sock)

    def _popen(self, slot: int) -> tuple[Worker, socket.socket]:
        parent_end, child_end = socket.socketpair()
        config = {
            **self.options.config,
            "fd": child_end.fileno(),
            "queue_fd": self._queue.fileno(),
            "board_fd": self.board.fd,
            "slot": slot,
            "slots": self.options.workers,
            "max_queue_wait": self.max_queue_wait,
            "parent": os.getpid(),
        }
        environ = {**self.options.environ, VAR_WORKER_CONFIG: json.dumps(config)}
        proc = subprocess.Popen(
            [self.options.python, "-m", WORKER_MODULE],
            pass_fds=(child_end.fileno(), self._queue.fileno(), self.board.fd),
            env=environ,
            stdin=subprocess.DEVNULL,
        )
        child_end.close()
        parent_end.setblocking(False)
        worker = Worker(slot, proc)
        self.workers[slot] = worker
        return worker, parent_end

    def _spawn(self, slot: int) -> None:
        self.loop.create_task(self._connect(*self._popen(slot)))

    async def _connect(self, worker: Worker, sock: socket.socket) -> None:
        await self.loop.create_unix_connection(lambda: _Channel(self, worker), sock=sock)

    def pids(self) -> list[int]:
        return [w.proc.pid for w in self.workers if w is not None]

    async def stop(self, timeout: float = 5.0) -> None:
        """Stop every worker: SIGTERM, then SIGKILL after ``timeout`` seconds."""
        self.closing = True
        procs = [w.proc for w in self.workers if w is not None]
        for proc in procs:
            signal_process(proc, signal.SIGTERM)
        for proc in procs:
            try:
                await asyncio.wait_for(self.loop.run_in_executor(None, proc.wait), timeout)
            except TimeoutError:
                signal_process(proc, signal.SIGKILL)
                await self.loop.run_in_executor(None, proc.wait)
