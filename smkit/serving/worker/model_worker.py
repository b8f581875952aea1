"""A model worker: forked from the worker template (smkit/serving/worker/template.py), or started fresh by the
front end as ``python -m smkit.serving.worker.model_worker``; either way a process no library has been loaded in.

The worker loads the model itself (``model_fn`` runs here, never in a process that forks), tells the
front end it is ready, then takes one request at a time from its own queue (first) or the queue all
workers share (smkit/serving/front/pinning.py says which goes where), or up to
``SMKIT_WORKER_CONCURRENCY`` at once, each on a thread: :mod:`smkit.serving.worker.concurrency`), runs it
through :class:`~smkit.serving.worker.routes.WorkerRoutes` and sends the reply back on its own socket (the channels
of :mod:`smkit.serving.wire.ipc`, inherited from the front end). It imports only
the standard library and smkit's handler-side modules, so it can run under the model's own Python
environment (``SMKIT_WORKER_PYTHON``, docs/serving-runtime.md). Multi-model mode also needs smkit's
archive and requirements modules, i.e. the kit's interpreter.

Configuration comes from ``SMKIT_WORKER_CONFIG`` (JSON written by the front end) and the serving
environment variables, inherited from the front end.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import socket
import sys
import time
import traceback
from typing import Any, cast

from smkit import contract
from smkit.hosting.env import VAR_ENABLE_STATEFUL_SESSIONS, VAR_WORKER_CONFIG, ServingEnv
from smkit.process import die_with_parent, name_process
from smkit.serving.wire import ipc, messages
from smkit.serving.wire.errors import InferenceError, queue_timeout
from smkit.serving.wire.reply import error_reply
from smkit.serving.worker import batching, bidi, concurrency, deadline, streams
from smkit.serving.worker.context import RequestHeaders
from smkit.serving.worker.handler import ModelHandler, StreamedReply
from smkit.serving.worker.routes import WorkerRequest, WorkerRoutes

log = logging.getLogger("smkit.serving.worker")
WORKER_NAME = "smkit-worker"  # the process name ps and top show (/proc/PID/comm)


def _die_with_parent(parent: int) -> None:
    """Linux: the kernel kills this worker when the front end dies, even by SIGKILL."""
    die_with_parent(signal.SIGKILL)
    if os.getppid() != parent:  # the front end died before prctl took effect
        os._exit(1)


def _single(config: dict[str, Any], env: ServingEnv) -> WorkerRoutes:
    handler = ModelHandler(
        name="model",
        model_dir=config["model_dir"],
        env=env,
        extra_paths=tuple(config.get("extra_paths", ())),
    )
    handler.load()
    return WorkerRoutes(env=env, handler=handler)


def _multi(config: dict[str, Any], env: ServingEnv, board: ipc.Scoreboard) -> WorkerRoutes:
    from smkit.serving.wire.registry import Registry
    from smkit.serving.worker.multimodel import ModelCache

    slot = int(config["slot"])
    cache = ModelCache(
        env=env,
        registry=Registry(config["registry_dir"]),
        workers=int(config["workers"]),
        model_root=config.get("model_root"),
        guard=lambda: deadline.deadline(env.timeout_seconds),
        on_load=lambda: _extend(board, slot, env.startup_timeout_seconds),
    )
    return WorkerRoutes(env=env, cache=cache)


def _extend(board: ipc.Scoreboard, slot: int, seconds: float) -> None:
    """A model load inside a request: its deadline moves by ``seconds``, here and for the front end."""
    board.extend(slot, seconds)
    deadline.extend_job(seconds)


class _Stop:
    """SIGTERM (a process-group signal, e.g. a local endpoint stopping): finish the request in hand, then
    exit; at once when idle or loading. The front end replaces no worker once it is stopping."""

    busy = False
    requested = False


def _on_term(signum: int, frame: Any) -> None:
    if _Stop.busy:
        _Stop.requested = True
    else:
        raise SystemExit(0)


def _load(
    config: dict[str, Any], env: ServingEnv, sock: socket.socket, board: ipc.Scoreboard
) -> WorkerRoutes | None:
    started = time.perf_counter()
    try:
        router = _multi(config, env, board) if config["mode"] == "multi" else _single(config, env)
        if router.handler is not None:
            # Adapters registered before this worker started (a replacement): loaded before it is ready.
            for name, src in config.get("adapters", {}).items():
                router.handler.call_contract_hook("load_adapter_fn", name, src)
    except Exception as exc:  # noqa: BLE001 - a failed load is reported by /ping, not a crash
        message = f"{type(exc).__name__}: {exc}"
        # The front end logs the traceback once, not once per retry of every slot (smkit/serving/front/pool.py).
        failure = {"ok": False, "error": message, "traceback": traceback.format_exc(), "pid": os.getpid()}
        ipc.send_frame(sock, ipc.READY, ipc.encode_json(failure))
        return None
    features = _features(router, env)
    if env.batching and features[messages.FEATURE_PINNED]:
        message = (
            f"{contract.TS_BATCH_SIZE}={env.batch_size} (dynamic batching) cannot serve a handler that takes part in "
            f"stateful sessions ({VAR_ENABLE_STATEFUL_SESSIONS}) or defines adapter hooks (load_adapter_fn): "
            f"a batch mixes requests that must reach one worker; unset {contract.TS_BATCH_SIZE} or the session setting"
        )
        ipc.send_frame(sock, ipc.READY, ipc.encode_json({"ok": False, "error": message, "pid": os.getpid()}))
        return None
    loaded = {"ok": True, "pid": os.getpid(), "load_seconds": time.perf_counter() - started, **features}
    ipc.send_frame(sock, ipc.READY, ipc.encode_json(loaded))
    return router


def _features(router: WorkerRoutes, env: ServingEnv) -> dict[str, bool]:
    """What this worker takes part in (smkit/serving/front/pinning.py): it reads its own queue when any is on.

    A worker that runs one request at a time (no batching, ``SMKIT_WORKER_CONCURRENCY`` 1) takes jobs the
    front end dispatches to it while it is idle; batching and concurrent workers read the shared queue only.
    """
    adapters = router.handler is not None and router.handler.has_adapter_hooks
    pinned = router.handler is not None and (env.stateful_sessions or adapters)
    dispatch = not env.batching and env.worker_concurrency == 1
    return {
        messages.FEATURE_PINNED: pinned,
        messages.FEATURE_ADAPTERS: adapters,
        messages.FEATURE_DISPATCH: dispatch,
    }


def serve(
    queue: socket.socket,
    sock: socket.socket,
    board: ipc.Scoreboard,
    slot: int,
    router: WorkerRoutes,
    pinned: socket.socket | None = None,
) -> None:
    """Take jobs from the shared queue and answer each on ``sock`` until the queue closes.

    The scoreboard slot says which job this worker holds and runs (smkit/serving/wire/ipc.py), so the front
    end can answer 504 and replace this worker if it never returns, and answer the client if it dies. A
    job whose deadline (arrival + ``SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS``) has passed is not run: its
    client has had its 504 from the front end. With batching on (``SAGEMAKER_TS_BATCH_SIZE`` > 1) the
    worker forms batches from the same queue (:mod:`smkit.serving.worker.batching`).
    """
    width = router.env.worker_concurrency
    if width > 1:
        # ``slot`` is the worker's; its scoreboard slots are one per request it may run (smkit/serving/front/pool.py).
        slots = range(slot * width, (slot + 1) * width)
        shared = ipc.JobReader(queue, board.landing(slots[0]))
        mine = ipc.JobReader(pinned, board.landing(slots[0])) if pinned is not None else None
        frames, cancels = cast(socket.socket, concurrency.FrameSocket(sock)), streams.Cancels(sock)
        runners = {s: _JobRunner(frames, cancels, board, s, router, session_sock=sock).run for s in slots}
        concurrency.serve(shared, mine, board, slots, runners)
        return
    reader = ipc.JobReader(queue, board.landing(slot))
    own = ipc.JobReader(pinned, board.landing(slot)) if pinned is not None else None
    job = _JobRunner(sock, streams.Cancels(sock), board, slot, router)
    if router.env.batching:
        # A handler with sessions or adapters is refused at load with batching on (_load), so a batching
        # worker has no queue of its own.
        batching.serve(reader, sock, board, slot, router, job.run, _Stop)
        return
    take = reader.read if own is None else _Queues(reader, own).next
    while True:
        received = take()
        if received is None:
            return
        job.run(received)
        if _Stop.requested:
            return


class _JobRunner:
    """Runs one job taken from the queue and answers it (a reply, a stream or a session)."""

    def __init__(
        self,
        sock: socket.socket,
        cancels: streams.Cancels,
        board: ipc.Scoreboard,
        slot: int,
        router: WorkerRoutes,
        session_sock: socket.socket | None = None,
    ) -> None:
        self.sock = sock
        self.session_sock = sock if session_sock is None else session_sock  # a session drives it itself
        self.cancels = cancels
        self.board = board
        self.slot = slot
        self.router = router
        self.pid = os.getpid()

    def run(self, received: tuple[ipc.JobMeta, bytes]) -> None:
        sock, cancels, board, slot, router, pid = (
            self.sock,
            self.cancels,
            self.board,
            self.slot,
            self.router,
            self.pid,
        )
        timeout = router.env.timeout_seconds
        _Stop.busy = True
        (job_id, queued_at, until, method, path, headers), body = received
        now = time.monotonic()
        waited = now - queued_at
        if now >= until:
            reply = error_reply(queue_timeout(timeout, waited), debug=False)
        elif path == messages.BIDI_PATH and method == "GET":
            board.run(slot, job_id)
            headers_ = RequestHeaders.from_raw(headers)
            _session(self.session_sock, cancels, job_id, router, headers_, pid, board, slot)
            board.finish(slot)
            _Stop.busy = False
            return
        else:
            board.run(slot, job_id)
            deadline.start_job(until)
            reply = router.dispatch(WorkerRequest(method, path, RequestHeaders.from_raw(headers), body))
        timings = ipc.worker_timings(waited, reply.timings)
        if not isinstance(reply, StreamedReply):
            out = ipc.reply_meta(job_id, reply.status, reply.content_type, reply.headers, pid, timings)
            ipc.send_frame(sock, ipc.REPLY, out, reply.body)
        else:
            _stream(
                sock, cancels, job_id, reply, pid, deadline.job_until(), timeout, router.env.debug, timings
            )
            cancels.forget(job_id)
        deadline.start_job(0.0)
        board.finish(slot)
        _Stop.busy = False


class _Queues:
    """This worker's own queue and the shared one (smkit/serving/front/pinning.py), watched by one ``poll``
    object made once: about half the instructions per request of a ``select`` call (callgrind)."""

    def __init__(self, shared: ipc.JobReader, own: ipc.JobReader) -> None:
        self.shared = shared
        self.own = own
        self.own_fd = own.sock.fileno()
        self.poller = select.poll()
        self.poller.register(own.sock, select.POLLIN)
        self.poller.register(shared.sock, select.POLLIN)

    def next(self) -> tuple[ipc.JobMeta, bytes] | None:
        """The next job, from the worker's own queue first; None when the queues close."""
        while True:
            ready = self.poller.poll()
            if len(ready) > 1 or ready[0][0] == self.own_fd:
                return self.own.read()
            try:
                return self.shared.read(flags=socket.MSG_DONTWAIT)
            except BlockingIOError:
                continue  # another worker took it first


def _session(
    sock: socket.socket,
    cancels: streams.Cancels,
    job_id: int,
    router: WorkerRoutes,
    headers: RequestHeaders,
    pid: int,
    board: ipc.Scoreboard,
    slot: int,
) -> None:
    """A bidirectional-streaming session (WebSocket) on this worker until it ends."""

    def open_session(messages: Any) -> Any:
        if router.handler is None:
            raise InferenceError(
                "bidirectional streaming serves a single model; multi-model mode has none", status_code=404
            )
        return router.handler.session(messages, headers)

    def failed(exc: BaseException) -> tuple[bytes, bytes]:
        error = error_reply(exc, debug=router.env.debug)
        return ipc.reply_meta(job_id, error.status, error.content_type, error.headers, pid), error.body

    bidi.serve_session(
        sock,
        cancels,
        job_id,
        open_session,
        lambda: ipc.reply_meta(job_id, 200, "", {}, pid),
        failed,
        lambda until: board.extend(slot, until),  # math.inf: no deadline while the client stays
    )


def _stream(
    sock: socket.socket,
    cancels: streams.Cancels,
    job_id: int,
    reply: StreamedReply,
    pid: int,
    until: float,
    timeout: float,
    debug: bool,
    timings: ipc.Timings = ipc.NO_TIMINGS,
) -> None:
    """Send a streamed reply; the job's scoreboard deadline ``until`` bounds the whole stream."""

    def failed(exc: BaseException) -> tuple[bytes, bytes]:
        error = error_reply(exc, debug=debug)
        return ipc.reply_meta(job_id, error.status, error.content_type, error.headers, pid), error.body

    streams.send_stream(
        sock,
        cancels,
        job_id,
        lambda: ipc.reply_meta(job_id, reply.status, reply.content_type, reply.headers, pid, timings),
        reply.stream,
        until,
        timeout,
        failed,
    )


def main() -> int:
    """Run the worker described by ``SMKIT_WORKER_CONFIG``."""
    config = json.loads(os.environ[VAR_WORKER_CONFIG])
    name_process(WORKER_NAME)  # forked from the template, it would keep the template's name
    _die_with_parent(int(config["parent"]))
    # The front end stops workers; a terminal's Ctrl-C reaches the whole process group.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_term)
    env = ServingEnv.from_environ(os.environ)
    level = int(env.log_level) if env.log_level.isdigit() else env.log_level
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    deadline.install()
    sock = socket.socket(fileno=int(config["fd"]))
    sock.setblocking(True)
    queue = socket.socket(fileno=int(config["queue_fd"]))
    queue.setblocking(True)
    board = ipc.Scoreboard(int(config["board_fd"]), int(config["slots"]), int(config.get("board_batch", 1)))
    # A closed socket means the front end is gone or stopping: this worker's job is over, not an error.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError, SystemExit):
        # A retry after a failed load: started early so that its start-up overlaps the back-off, it loads
        # once the back-off has passed (smkit/serving/front/lifecycle.py; SIGTERM ends the wait).
        load_at = config.get("load_at")
        if load_at is not None:
            time.sleep(max(0.0, float(load_at) - time.clock_gettime(time.CLOCK_MONOTONIC)))
        router = _load(config, env, sock, board)
        if router is not None:
            pinned = None
            features = _features(router, env)
            own_queue = features[messages.FEATURE_PINNED] or features[messages.FEATURE_DISPATCH]
            if own_queue and messages.CONFIG_FD in config:
                pinned = socket.socket(fileno=int(config[messages.CONFIG_FD]))
                pinned.setblocking(True)
            serve(queue, sock, board, int(config["slot"]), router, pinned)
    return 0


def flush() -> None:
    """Before ``os._exit``: the log handlers and the standard streams."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


if __name__ == "__main__":
    code = main()
    flush()
    os._exit(code)  # no interpreter teardown: with large ML libraries loaded it costs seconds of CPU
