"""The model-worker pool of the front end: fresh worker processes, one shared bounded queue, deadlines.

Every worker loads the model itself: it is forked from the worker template, a process that has imported
the runtime and nothing else (smkit/serving/worker/template.py, smkit/serving/front/forking.py), or started as a new
interpreter (``python -m smkit.serving.worker.model_worker``) where the template cannot be used. Nothing is forked
from a process that has loaded a library, so OpenMP or CUDA thread pools are always created in the process
that uses them. A request that arrives while a worker is idle goes to the idle worker that finished last,
through that worker's own queue (:mod:`smkit.serving.front.pinning`); otherwise requests wait in one FIFO
queue that every worker reads (the kernel's: :mod:`smkit.serving.wire.ipc`), and whichever worker is free
takes the next one. At most
``queue_size`` requests wait beyond one per worker (then 503). A worker runs one request at a time, or one
batch of up to ``batch_size`` with batching on (smkit/serving/worker/batching.py; the queue holds that many more),
or up to ``concurrency`` requests side by side (``SMKIT_WORKER_CONCURRENCY``, smkit/serving/worker/concurrency.py;
each has a scoreboard slot of its own).

Deadlines (``SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS``) count from a request's arrival, as SageMaker's
do: the client gets 504 at that moment whether its request is still queued or running. A worker never
runs a request past its deadline (it answers 504 without running it), the worker's own SIGALRM
interrupts Python code at the deadline, and a sweep of the front end's own job records catches the rest
within a tenth of the limit; a worker that has not answered ``kill_grace`` seconds after the deadline
(stuck in C code, signals blocked) is killed and replaced. A worker that dies holding a request answers
its client 500 (the scoreboard says which request it held, even when it died the instant it took it).
Worker starts, failed loads, retries and ``/ping``: :mod:`smkit.serving.front.lifecycle`. See
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from smkit.hosting.env import VAR_WORKER_CONFIG
from smkit.process import describe_exit, signal_process
from smkit.serving.front import forking, lifecycle, pinning, relay
from smkit.serving.front.relay import Job
from smkit.serving.wire import ipc, messages
from smkit.serving.wire.errors import InferenceError, ModelNotReady, queue_timeout, timeout_error
from smkit.serving.wire.reply import Reply, error_reply

log = logging.getLogger("smkit.serving")
WORKER_MODULE = "smkit.serving.worker.model_worker"
# The job records are swept this often while requests are outstanding (a tenth of the timeout when that
# is shorter, never more often than every 10 ms): one timer for all requests instead of one per request.
MAX_SWEEP_SECONDS = 1.0
MIN_SWEEP_SECONDS = 0.01
# A retry's worker config: the CLOCK_MONOTONIC time (system-wide on Linux) before which it must not load.
LOAD_AT = "load_at"
QUEUE_BUFFER_BYTES = 4 * 1024 * 1024  # the kernel caps it at net.core.wmem_max; the backlog holds the rest


class QueueFull(InferenceError, status=503, error_type="ServiceUnavailable"):
    """Every worker is busy and the queue holds ``queue_size`` requests (503)."""


class Process(Protocol):
    """A worker process as the pool uses it (``subprocess.Popen``, a worker the template forked
    (smkit/serving/front/forking.py); the tests' fake processes)."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...

    def wait(self) -> int: ...

    def send_signal(self, sig: int) -> None: ...


# Starts a worker: (argv, environment, descriptors to pass) -> the process.
Starter = Callable[[Sequence[str], Mapping[str, str], tuple[int, ...]], Process]


def start_process(argv: Sequence[str], environ: Mapping[str, str], fds: tuple[int, ...]) -> Process:
    """Start a worker interpreter (the default :data:`Starter`)."""
    return subprocess.Popen(list(argv), pass_fds=fds, env=dict(environ), stdin=subprocess.DEVNULL)


@dataclass(frozen=True)
class PoolOptions:
    """How to run the workers.

    Attributes:
        workers: worker processes (``SAGEMAKER_MODEL_SERVER_WORKERS``).
        python: the interpreter that runs them (``SMKIT_WORKER_PYTHON``, default ``sys.executable``).
        config: what to serve, passed to every worker as JSON (see smkit/serving/worker/model_worker.py).
        timeout: seconds a request may take from its arrival.
        queue_size: requests that may wait for a free worker.
        environ: the workers' environment.
        kill_grace: seconds after the deadline before a worker that has not answered is killed.
        retries: failed loads in a row a worker slot retries (``SMKIT_WORKER_RETRIES``).
        batch_size: jobs one worker may hold at once (``SAGEMAKER_TS_BATCH_SIZE``; smkit/serving/worker/batching.py).
        concurrency: requests one worker runs at once (``SMKIT_WORKER_CONCURRENCY``;
            smkit/serving/worker/concurrency.py).
        template: fork workers from a template process that has imported the runtime and nothing else
            (smkit/serving/worker/template.py) instead of starting each with ``start``.
        start: starts a worker process.
    """

    workers: int
    python: str
    config: Mapping[str, Any]
    timeout: float
    queue_size: int
    environ: Mapping[str, str]
    kill_grace: float = 2.0
    retries: int = lifecycle.DEFAULT_RETRIES
    batch_size: int = 1
    concurrency: int = 1
    template: bool = False
    start: Starter = field(default=start_process, compare=False)


@dataclass(eq=False)
class Worker:
    """One worker process and the front end's end of its socket."""

    slot: int
    proc: Process
    killed: bool = False
    channel: _Channel | None = None
    reaped: bool = False  # its exit was collected (once, by the loss of its channel or by the pool's stop)
    started_at: float = field(default_factory=time.monotonic)


class Observer(Protocol):
    """What the pool reports for ``/metrics`` (:class:`smkit.serving.front.metrics.Metrics`)."""

    def worker_started(self, restart: bool) -> None: ...

    def worker_exited(self, during: str) -> None: ...

    def worker_loaded(self, load_seconds: float | None, since_start: float) -> None: ...

    def load_failed(self) -> None: ...


class _Channel(asyncio.BufferedProtocol):
    def __init__(self, pool: WorkerPool, worker: Worker) -> None:
        self.pool = pool
        self.worker = worker
        self.frames = ipc.FrameReceiver()
        self.transport: asyncio.Transport | None = None
        worker.channel = self

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.frames.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        for tag, meta, body in self.frames.updated(nbytes):
            self.pool.on_frame(self, tag, meta, body)

    def connection_lost(self, exc: Exception | None) -> None:
        self.frames.close()
        self.pool.on_lost(self.worker)


class WorkerPool:
    """Workers, the queue and the deadlines; lives on the front end's event loop."""

    def __init__(self, options: PoolOptions) -> None:
        self.options = options
        self.workers: list[Worker | None] = [None] * options.workers
        self.life = lifecycle.Lifecycle(options.workers, options.retries)
        self.jobs: dict[int, Job] = {}  # sent and not yet replied, in arrival (= deadline) order
        self.backlog: deque[Job] = deque()  # not yet taken by the kernel queue (its buffer was full)
        # Ids of the jobs given to the shared queue and not yet answered by a worker (queued, backlogged or
        # running anywhere): while there are none, a worker with nothing in its own queue is idle.
        self.shared: set[int] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._launched: list[tuple[Worker, socket.socket]] = []
        self._ids = itertools.count(1)
        self._logged_traceback: str | None = None
        # Called with the load error once every slot has given up (``smkit serve`` exits then).
        self.on_gave_up: Callable[[str], None] | None = None
        self._queue, self._queue_out = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._queue_out.setblocking(False)
        with contextlib.suppress(OSError):
            self._queue_out.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, QUEUE_BUFFER_BYTES)
        # One scoreboard slot per request a worker may run: worker slot s has slots s*c .. s*c+c-1.
        self.board = ipc.Scoreboard.create(options.workers * options.concurrency, options.batch_size)
        self._sweeper: asyncio.TimerHandle | None = None
        self._waits: dict[int, asyncio.TimerHandle] = {}  # retries waiting out their back-off, by slot
        self._reaping: set[asyncio.Task[None]] = set()  # exits being collected (each logs its one line)
        self._sweep_every = max(MIN_SWEEP_SECONDS, min(MAX_SWEEP_SECONDS, options.timeout / 10))
        # Per-worker queues for jobs that must reach one worker (sessions, adapters):
        # smkit/serving/front/pinning.py.
        self.pinning = pinning.Pinning()
        self._template: forking.Template | None = None
        self.observer: Observer | None = None  # the front end's metrics, when they are on

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    # -- state ---------------------------------------------------------------------------------------
    def ready_count(self) -> int:
        return self.life.count(lifecycle.READY)

    def not_ready(self) -> ModelNotReady | None:
        """Why ``/ping`` answers 503 now, or None (:meth:`smkit.serving.front.lifecycle.Lifecycle.not_ready`)."""
        reason = self.life.not_ready()
        return None if reason is None else ModelNotReady(reason)

    def accepting(self) -> ModelNotReady | None:
        """Why a request cannot be queued now (None: it can)."""
        reason = self.life.accepting()
        return None if reason is None else ModelNotReady(reason)

    def board_slots(self, slot: int) -> range:
        """The scoreboard slots of the worker in ``slot``: one per request it may run at once."""
        return range(slot * self.options.concurrency, (slot + 1) * self.options.concurrency)

    # -- requests ------------------------------------------------------------------------------------
    def submit(
        self,
        method: str,
        path: str,
        headers: ipc.RawHeaders,
        body: Sequence[bytes],
        token: Any,
        recipient: relay.Recipient,
        slot: int | None = None,
    ) -> None:
        """Queue one request; ``recipient.answer(token, reply, worker pid)`` follows. Raises QueueFull.

        ``slot``: only the worker in that slot may take it (:mod:`smkit.serving.front.pinning`).
        """
        # A worker runs up to a batch, or up to ``concurrency`` requests, at once.
        running = self.options.workers * self.options.batch_size * self.options.concurrency
        if len(self.jobs) >= running + self.options.queue_size:
            waiting = len(self.jobs) - running
            raise QueueFull(
                f"all {self.options.workers} workers are busy and {waiting} requests are waiting "
                "(the queue is full); retry later, add workers (SAGEMAKER_MODEL_SERVER_WORKERS) or "
                "raise SMKIT_QUEUE_SIZE"
            )
        job_id = next(self._ids)
        now = time.monotonic()
        until = now + self.options.timeout
        message, fd = ipc.job_message(job_id, now, until, method, path, headers, body)
        job = Job(job_id, message, fd, token, recipient, now, until)
        self.jobs[job_id] = job
        if slot is not None:
            if not self.pinning.send(slot, job):
                del self.jobs[job_id]
        elif not self.shared and (idle := self.pinning.idle_slot()) is not None:
            self.pinning.send(idle, job, dispatched=True)  # the idle worker that finished last
        else:
            self._enqueue(job)
        if self._sweeper is None:
            self._sweeper = self.loop.call_later(self._sweep_every, self._sweep)

    def _enqueue(self, job: Job) -> None:
        """Give ``job`` to the shared queue."""
        self.shared.add(job.id)
        if self.backlog or not self._send(job):
            self.backlog.append(job)

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
        now = time.monotonic()
        while self.backlog:
            job = self.backlog[0]
            if now >= job.until:  # answered by the sweep; no worker needs to see it
                self.backlog.popleft()
                self.shared.discard(job.id)
                self._drop(job)
            elif self._send(job):
                self.backlog.popleft()
            else:
                return

    def _drop(self, job: Job) -> None:
        self.jobs.pop(job.id, None)
        if job.fd >= 0:
            os.close(job.fd)
            job.fd = -1

    def _sweep(self) -> None:
        """Deadlines: 504 at a job's deadline (queued or running), kill a worker that overruns the grace."""
        now = time.monotonic()
        running: dict[int, tuple[Worker, float]] = {}
        for worker in self.workers:
            if worker is not None:
                for slot in self.board_slots(worker.slot):
                    job_id, extra = self.board.running(slot)
                    if job_id:
                        running[job_id] = (worker, extra)
                        for held in self.board.held(slot) if self.board.extra else ():
                            running[held] = (worker, extra)  # a batch runs as one
        grace = self.options.kill_grace
        stuck: dict[int, int] = {}  # worker slot -> its requests past deadline and grace
        for job in list(self.jobs.values()):
            if now < job.until:
                break  # jobs are in arrival order, and every deadline is arrival + the same timeout
            holder = running.get(job.id)
            due = job.until + (holder[1] if holder is not None else 0.0)
            if now < due:
                continue  # a model load inside the request extended it
            if holder is not None:
                worker = holder[0]
                job.fail(error_reply(timeout_error(self.options.timeout), debug=False), worker.proc.pid)
                if now >= due + grace and not worker.killed:
                    # A worker running requests side by side is killed once none of its threads can
                    # serve: one request stuck in C code costs the others nothing.
                    stuck[worker.slot] = stuck.get(worker.slot, 0) + 1
                    if stuck[worker.slot] >= self.options.concurrency:
                        self._kill(worker)
            else:
                waited = now - job.queued_at
                job.fail(error_reply(queue_timeout(self.options.timeout, waited), debug=False), os.getpid())
                if now >= due + grace:
                    # Still in the kernel's queue: the worker that takes it sees its deadline and skips it.
                    self._drop(job)
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
                job.answer(Reply(status, body, content_type, headers, timings=ipc.reply_timings(data)), pid)
            self.shared.discard(job_id)
            if self.backlog:
                self._flush_backlog()
            self.pinning.replied(channel.worker.slot, job_id)
            return
        if tag in relay.STREAM_TAGS:
            relay.stream_frame(self.jobs, channel, tag, data, body)
            if tag == messages.DONE:
                (job_id,) = messages.STREAM_JOB_ID.unpack(data)
                self.shared.discard(job_id)
                if self.backlog:
                    self._flush_backlog()
                self.pinning.replied(channel.worker.slot, job_id)
            return
        worker = channel.worker
        meta = json.loads(data)
        if tag == ipc.READY and self.workers[worker.slot] is worker:
            observer = self.observer
            if meta["ok"]:
                self.pinning.ready(worker.slot, meta)
                self.life.ready(worker.slot)
                self._flush_backlog()
                if observer is not None:
                    observer.worker_loaded(meta.get("load_seconds"), time.monotonic() - worker.started_at)
            else:
                self.life.load_failed(worker.slot, str(meta["error"]))
                self._log_load_failure(meta)
                if observer is not None:
                    observer.load_failed()

    def _log_load_failure(self, meta: dict[str, Any]) -> None:
        """The load error with its traceback, once per distinct traceback: the retries of every slot
        that fail the same way are each one line of :meth:`Lifecycle.exited`."""
        trace = str(meta.get("traceback") or meta["error"])
        if trace != self._logged_traceback:
            self._logged_traceback = trace
            log.error(
                "model load failed in worker %s: %s\n%s", meta.get("pid"), meta["error"], trace.rstrip()
            )

    def on_lost(self, worker: Worker) -> None:
        task = self.loop.create_task(self._reap(worker))
        self._reaping.add(task)
        task.add_done_callback(self._reaping.discard)

    async def _reap(self, worker: Worker) -> None:
        status = await self.loop.run_in_executor(None, worker.proc.wait)
        if worker.reaped:
            return
        worker.reaped = True
        slot, pid, exit_text = worker.slot, worker.proc.pid, describe_exit(status)
        # Every write of the dead process is visible now: the jobs it held are known exactly.
        held = [i for s in self.board_slots(slot) for i in (self.board.taken(s), *self.board.held(s))]
        jobs = [job for job in (self.jobs.pop(i, None) for i in held if i) if job is not None]
        self.shared.difference_update(held)
        for s in self.board_slots(slot):
            self.board.clear(s)
        after = None
        if self.observer is not None:
            state = self.life.slots[slot].state if self.workers[slot] is worker else lifecycle.READY
            during = (
                "stopping" if self.life.stopping else "serving" if state == lifecycle.READY else "loading"
            )
            self.observer.worker_exited(during)
        if self.workers[slot] is worker:
            wait = self._waits.pop(slot, None)
            if wait is not None:
                wait.cancel()
                if self.life.slots[slot].state == lifecycle.RETRYING:
                    self.life.started(slot)  # it died before saying how its load went: a failed start
            self.workers[slot] = None
            after = self.life.exited(slot, pid, exit_text)
            log.log(after.level, "%s", after.message)
            if after.delay is not None:
                self._respawn(slot, after.delay)
            elif self.life.gave_up() and self.on_gave_up is not None:
                self.on_gave_up(self.life.load_error or "")
        self.pinning.exited(slot, self.jobs, pid, self._enqueue)
        if jobs:
            message = f"the worker process exited ({exit_text}) while handling this request"
            if after is not None and after.delay is not None:
                message += "; it is being replaced"
            for job in jobs:
                job.fail(error_reply(InferenceError(message), debug=False), pid)

    def _respawn(self, slot: int, delay: float) -> None:
        """Start the slot's next process now; it loads the model ``delay`` seconds from now.

        The back-off is between a failed load and the next one: the new interpreter starts and imports the
        runtime meanwhile (a second or more on a busy machine), and waits for :data:`LOAD_AT` before it
        imports the handler.
        """
        if self.life.stopping:
            return
        load_at = time.clock_gettime(time.CLOCK_MONOTONIC) + delay if delay > 0 else None
        worker, sock = self._popen(slot, load_at, restart=True)
        if load_at is not None:
            self._waits[slot] = self.loop.call_later(delay, self._loading, worker)
        self.loop.create_task(self._connect(worker, sock))

    def _loading(self, worker: Worker) -> None:
        """A retry's back-off is over: its process loads the model now."""
        self._waits.pop(worker.slot, None)
        # Unless this timer ran late and the process already said how its load went.
        if self.workers[worker.slot] is worker and self.life.slots[worker.slot].state == lifecycle.RETRYING:
            self.life.started(worker.slot)

    # -- processes -----------------------------------------------------------------------------------
    def launch(self, template: forking.Template | None = None) -> None:
        """Start every worker process now (they load in parallel while the front end starts); ``template``:
        a worker template already started (:func:`smkit.serving.front.launch.serve` starts it first)."""
        if template is not None:
            self._template = template
        elif self.options.template:
            self._template = forking.start_template(self.options.python, self.options.environ)
        for slot in range(self.options.workers):
            self._launched.append(self._popen(slot))

    async def start(self) -> None:
        """Connect to the launched workers (:meth:`not_ready` says when they have loaded)."""
        launched, self._launched = self._launched, []
        for worker, sock in launched:
            await self._connect(worker, sock)

    def _popen(
        self, slot: int, load_at: float | None = None, restart: bool = False
    ) -> tuple[Worker, socket.socket]:
        parent_end, child_end = socket.socketpair()
        pinned_fd = self.pinning.open(slot)
        config = {
            **self.options.config,
            **self.pinning.worker_config(slot, pinned_fd),
            **({LOAD_AT: load_at} if load_at is not None else {}),
            "fd": child_end.fileno(),
            "queue_fd": self._queue.fileno(),
            "board_fd": self.board.fd,
            "slot": slot,
            "slots": self.options.workers * self.options.concurrency,
            "board_batch": self.options.batch_size,
            "concurrency": self.options.concurrency,
            "parent": os.getpid(),
        }
        try:
            proc: Process
            if self._template is not None and not self._template.broken:
                proc = self._template.fork(config)
            else:
                proc = self.options.start(
                    [self.options.python, "-m", WORKER_MODULE],
                    {**self.options.environ, VAR_WORKER_CONFIG: json.dumps(config)},
                    (child_end.fileno(), self._queue.fileno(), self.board.fd, pinned_fd),
                )
        finally:
            child_end.close()
            os.close(pinned_fd)
        parent_end.setblocking(False)
        worker = Worker(slot, proc)
        if self.observer is not None:
            self.observer.worker_started(restart)
        self.workers[slot] = worker
        if load_at is None:
            self.life.started(slot)  # a retry stays "retrying" until its back-off is over (_loading)
        return worker, parent_end

    async def _connect(self, worker: Worker, sock: socket.socket) -> None:
        await self.loop.create_unix_connection(lambda: _Channel(self, worker), sock=sock)

    def pids(self) -> list[int]:
        return [w.proc.pid for w in self.workers if w is not None]

    def stopping(self) -> None:
        """The server is stopping (SIGTERM, SIGINT): a worker that exits from now on is not replaced."""
        self.life.stop()
        for handle in self._waits.values():
            handle.cancel()
        self._waits.clear()

    async def stop(self, timeout: float = 5.0) -> None:
        """Stop every worker: SIGTERM, then SIGKILL after ``timeout`` seconds."""
        self.stopping()
        procs = [w.proc for w in self.workers if w is not None]
        for proc in procs:
            signal_process(proc, signal.SIGTERM)
        for proc in procs:
            try:
                await asyncio.wait_for(self.loop.run_in_executor(None, proc.wait), timeout)
            except TimeoutError:
                signal_process(proc, signal.SIGKILL)
                await self.loop.run_in_executor(None, proc.wait)
        # Every exit is collected and said once before the loop ends, also where the loss of the worker's
        # channel is not handled yet (a worker signalled with the server, a process group stopped at once):
        # a later loss finds its slot empty.
        for worker in [w for w in self.workers if w is not None]:
            await self._reap(worker)
        if self._reaping:
            await asyncio.gather(*self._reaping, return_exceptions=True)
        if self._template is not None:
            await self.loop.run_in_executor(None, self._template.stop)
