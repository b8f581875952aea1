"""The model-worker pool of the front end: fresh worker processes, one shared bounded queue, deadlines.

Every worker is a new interpreter (``python -m smkit.serving.model_worker``) that loads the model
itself: nothing is forked from a process that has loaded a library, so OpenMP or CUDA thread pools are
always created in the process that uses them. A request goes to the first idle worker, or waits in one
FIFO queue of at most ``queue_size`` requests (full: 503). A worker runs one request at a time.

Deadlines (``SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS``): the client gets 504 when its request has run
that long in a worker (the worker's own SIGALRM interrupts Python code at the same moment); a worker
that has not answered ``kill_grace`` seconds later (stuck in C code, signals blocked) is killed and
replaced. A request that waited longer than InvokeEndpoint's 60 s (or the timeout, if longer) in the
queue gets 504 without running. A worker that dies
mid-request answers its client 500 and is replaced. See docs/serving-runtime.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

from smkit.serving import ipc
from smkit.serving.env import VAR_WORKER_CONFIG
from smkit.serving.errors import InferenceError, InvocationTimeout, ModelNotReady
from smkit.serving.handler import Reply, error_reply

log = logging.getLogger("smkit.serving")
WORKER_MODULE = "smkit.serving.model_worker"
STARTING, IDLE, BUSY, DEAD = "starting", "idle", "busy", "dead"
MAX_BACKOFF_SECONDS = 30.0
INVOKE_ENDPOINT_SECONDS = 60.0  # docs/hosting-contract.md


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
    """

    workers: int
    python: str
    config: Mapping[str, Any]
    timeout: float
    queue_size: int
    environ: Mapping[str, str]
    kill_grace: float = 2.0


class Recipient(Protocol):
    """Who gets a job's reply: the front end, for the request ``token`` stands for."""

    def answer(self, token: Any, reply: Reply, pid: int) -> None: ...


class Job:
    """One request waiting for or running in a worker."""

    __slots__ = ("data", "token", "recipient", "queued_at", "answered")

    def __init__(self, data: bytes, token: Any, recipient: Recipient, queued_at: float) -> None:
        self.data = data  # the JOB_ frame
        self.token = token
        self.recipient = recipient
        self.queued_at = queued_at
        self.answered = False

    def answer(self, reply: Reply, pid: int) -> None:
        if not self.answered:
            self.answered = True
            self.recipient.answer(self.token, reply, pid)


@dataclass(eq=False)
class Worker:
    """One worker process and the front end's end of its socket."""

    slot: int
    proc: subprocess.Popen[bytes]
    state: str = STARTING
    transport: asyncio.Transport | None = None
    job: Job | None = None
    timer: asyncio.TimerHandle | None = None
    load_failed: bool = False


class _Channel(asyncio.Protocol):
    def __init__(self, pool: WorkerPool, worker: Worker) -> None:
        self.pool = pool
        self.worker = worker
        self.buffer = ipc.FrameBuffer()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.worker.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        for tag, meta, body in self.buffer.feed(data):
            self.pool.on_frame(self.worker, tag, meta, body)

    def connection_lost(self, exc: Exception | None) -> None:
        self.pool.on_lost(self.worker)


class WorkerPool:
    """Workers, the queue and the deadlines; lives on the front end's event loop."""

    def __init__(self, options: PoolOptions) -> None:
        self.options = options
        self.workers: list[Worker | None] = [None] * options.workers
        self.idle: deque[Worker] = deque()
        self.queue: deque[Job] = deque()
        self.load_error: str | None = None
        self.latched = False  # every worker was ready once: /ping stays 200 through replacements
        self.closing = False
        self._failures = [0] * options.workers
        self._loop: asyncio.AbstractEventLoop | None = None
        self._launched: list[tuple[Worker, socket.socket]] = []
        # After InvokeEndpoint's 60 s the caller has its answer: running the request then is wasted work.
        self.max_queue_wait = max(options.timeout, INVOKE_ENDPOINT_SECONDS)

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    # -- state ---------------------------------------------------------------------------------------
    def ready_count(self) -> int:
        return sum(1 for w in self.workers if w is not None and w.state in (IDLE, BUSY))

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
        recipient: Recipient,
    ) -> None:
        """Queue one request; ``recipient.answer(token, reply, worker pid)`` follows. Raises QueueFull."""
        job = Job(ipc.job_frame(method, path, headers, body), token, recipient, self.loop.time())
        while self.idle:
            worker = self.idle.popleft()
            if worker.state == IDLE:
                self._assign(worker, job)
                return
        if len(self.queue) >= self.options.queue_size:
            raise QueueFull(
                f"all {self.options.workers} workers are busy and {len(self.queue)} requests are waiting "
                "(the queue is full); retry later, add workers (SAGEMAKER_MODEL_SERVER_WORKERS) or "
                "raise SMKIT_QUEUE_SIZE"
            )
        self.queue.append(job)

    def _assign(self, worker: Worker, job: Job) -> None:
        assert worker.transport is not None
        worker.state = BUSY
        worker.job = job
        worker.transport.write(job.data)
        worker.timer = self.loop.call_later(self.options.timeout, self._on_deadline, worker)

    def _next(self, worker: Worker) -> None:
        """Give an idle worker the oldest waiting request (or park it)."""
        now = self.loop.time()
        while self.queue:
            job = self.queue.popleft()
            if job.answered:
                continue
            waited = now - job.queued_at
            if waited > self.max_queue_wait:
                job.answer(error_reply(_timeout(self.max_queue_wait, waited), debug=False), os.getpid())
                continue
            self._assign(worker, job)
            return
        worker.state = IDLE
        self.idle.append(worker)

    def _on_deadline(self, worker: Worker) -> None:
        if worker.job is not None:
            worker.job.answer(error_reply(_timeout(self.options.timeout), debug=False), worker.proc.pid)
        worker.timer = self.loop.call_later(self.options.kill_grace, self._kill, worker)

    def _kill(self, worker: Worker) -> None:
        log.warning(
            "worker %d did not return %.0f s after the %g s deadline (stuck outside Python code?): "
            "killing and replacing it",
            worker.proc.pid,
            self.options.kill_grace,
            self.options.timeout,
        )
        worker.timer = None
        worker.job = None
        _signal(worker.proc, signal.SIGKILL)

    # -- frames from workers -------------------------------------------------------------------------
    def on_frame(self, worker: Worker, tag: bytes, data: bytes, body: bytes) -> None:
        if tag == ipc.REPLY:
            if worker.timer is not None:
                worker.timer.cancel()
                worker.timer = None
            job, worker.job = worker.job, None
            if job is not None:
                status, content_type, headers, pid = ipc.parse_reply(data)
                job.answer(Reply(status, body, content_type, headers), pid)
            if worker.state == BUSY:
                self._next(worker)
            return
        meta = json.loads(data)
        if tag == ipc.EXTEND:
            if worker.timer is not None and worker.job is not None:
                worker.timer.cancel()
                extended = self.options.timeout + float(meta["seconds"])
                worker.timer = self.loop.call_later(extended, self._on_deadline, worker)
        elif tag == ipc.READY:
            if meta["ok"]:
                self._failures[worker.slot] = 0
                self.load_error = None
                self._next(worker)
            else:
                worker.load_failed = True
                self.load_error = str(meta["error"])

    def on_lost(self, worker: Worker) -> None:
        previous, worker.state = worker.state, DEAD
        if worker.timer is not None:
            worker.timer.cancel()
            worker.timer = None
        self.loop.create_task(self._reap(worker, previous))

    async def _reap(self, worker: Worker, previous: str) -> None:
        status = await self.loop.run_in_executor(None, _wait, worker.proc)
        if self.workers[worker.slot] is worker:
            self.workers[worker.slot] = None
        if worker.job is not None:
            worker.job.answer(
                error_reply(
                    InferenceError(
                        f"the worker process exited ({_describe_status(status)}) while handling this "
                        "request; it is being replaced"
                    ),
                    debug=False,
                ),
                worker.proc.pid,
            )
            worker.job = None
        if self.closing:
            return
        if previous == STARTING:
            if self.load_error is None:
                self.load_error = f"the worker exited ({_describe_status(status)}) while loading the model"
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
                "worker %d exited (%s); starting a replacement", worker.proc.pid, _describe_status(status)
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
            "parent": os.getpid(),
        }
        environ = {**self.options.environ, VAR_WORKER_CONFIG: json.dumps(config)}
        proc = subprocess.Popen(
            [self.options.python, "-m", WORKER_MODULE],
            pass_fds=(child_end.fileno(),),
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
            _signal(proc, signal.SIGTERM)
        for proc in procs:
            try:
                await asyncio.wait_for(self.loop.run_in_executor(None, _wait, proc), timeout)
            except TimeoutError:
                _signal(proc, signal.SIGKILL)
                await self.loop.run_in_executor(None, _wait, proc)


def _timeout(seconds: float, waited: float | None = None) -> InvocationTimeout:
    if waited is not None:
        return InvocationTimeout(
            f"the request waited {waited:.1f} s for a free worker, longer than the {seconds:g} s limit; "
            "add workers (SAGEMAKER_MODEL_SERVER_WORKERS) or send fewer requests at once"
        )
    return InvocationTimeout(
        f"the model did not answer within {seconds:g} s "
        "(SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS); raise the limit or speed up the handler"
    )


def _wait(proc: subprocess.Popen[bytes]) -> int:
    return proc.wait()


def _signal(proc: subprocess.Popen[bytes], sig: int) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)


def _describe_status(status: int) -> str:
    if status < 0:
        return f"killed by {signal.Signals(-status).name}"
    return f"exit status {status}"
