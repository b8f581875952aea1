"""Process management: gunicorn's arbiter and uvicorn workers running :class:`~smkit.serving.app.ServingApp`.

Start-up order (single-model): the model is loaded once in the arbiter while a small thread answers every
request on the port with 503 (``/ping`` not ready, docs/hosting-contract.md), then the workers fork and share the
loaded model copy-on-write. Each worker listens on its own SO_REUSEPORT socket so that the kernel spreads
keep-alive connections across workers. A worker that dies is replaced by the arbiter from the
same loaded state. ``SMKIT_LOAD_AFTER_FORK=true`` loads the model in every worker instead, for libraries
that do not survive ``fork`` (their threads or device handles). SIGTERM stops gracefully, SIGINT quickly;
no child process outlives the server.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import multiprocessing
import os
import select
import signal
import socket
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from gunicorn.app.base import BaseApplication

from smkit.serving import deadline
from smkit.serving.app import ServingApp, SingleModel
from smkit.serving.env import ServingEnv
from smkit.serving.handler import ModelHandler

log = logging.getLogger("smkit.serving")
GRACEFUL_SECONDS = 20  # SageMaker sends SIGKILL 30 s after SIGTERM (docs/hosting-contract.md)
LOADING_BODY = json.dumps({"code": 503, "type": "ModelNotReady", "message": "the model is still loading"})


@dataclass(frozen=True)
class ServerOptions:
    """Where and how to serve."""

    host: str
    port: int
    workers: int
    load_after_fork: bool = False


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def check_port_free(host: str, port: int) -> None:
    """Raise OSError when another process listens on ``host:port``.

    Workers bind with SO_REUSEPORT (below), which would otherwise let a second server share the port
    silently; this probe binds without it.
    """
    with socket.socket(_family(host), socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host, port))


def shared_listener(host: str, port: int) -> socket.socket:
    """A SO_REUSEPORT listener on the workers' address (the arbiter's, for the loading phase)."""
    listener = socket.socket(_family(host), socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    listener.bind((host, port))
    listener.listen(128)
    return listener


def _loading_responder(listener: socket.socket, wake: socket.socket) -> None:
    """Answer 503 on ``listener`` until ``wake`` becomes readable (it sleeps in select between requests)."""
    response = (
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(LOADING_BODY)}\r\nConnection: close\r\n\r\n{LOADING_BODY}"
    ).encode()
    while True:
        readable, _, _ = select.select([listener, wake], [], [])
        if wake in readable:
            return
        try:
            conn, _ = listener.accept()
        except (BlockingIOError, OSError):
            continue
        try:
            conn.settimeout(1.0)
            conn.recv(65536)
            conn.sendall(response)
        except OSError:
            pass
        finally:
            conn.close()


def _die_with_arbiter() -> None:
    """Linux: the kernel kills this worker if the arbiter dies, even by SIGKILL (no orphaned workers)."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _stop_loading(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def _load_single(single: SingleModel, handler: ModelHandler) -> None:
    try:
        handler.load()
        single.handler = handler
    except Exception as exc:  # noqa: BLE001 - a failed load is reported by /ping, not fatal
        single.error = f"{type(exc).__name__}: {exc}"
        log.error("model load failed: %s", single.error, exc_info=True)


def exit_now(code: int) -> NoReturn:
    """Flush and leave without interpreter teardown.

    With large ML libraries loaded, Python's shutdown (module teardown, garbage collection) takes
    seconds of CPU and nothing in it matters to a server: logs are written unbuffered and files closed.
    """
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _worker_exit(arbiter: Any, worker: Any) -> None:
    exit_now(0 if getattr(worker, "booted", True) else 3)  # 3: gunicorn's WORKER_BOOT_ERROR


class GunicornServer(BaseApplication):
    """gunicorn configured in code (no config files, no control socket, no pid files)."""

    def __init__(
        self,
        *,
        env: ServingEnv,
        options: ServerOptions,
        app: ServingApp,
        handler: ModelHandler | None,
        on_worker_start: Callable[[], None] | None = None,
    ) -> None:
        self.env = env
        self.options = options
        self.serving_app = app
        self.handler = handler
        self.on_worker_start = on_worker_start
        # Workers started so far, shared across fork; /ping waits for all of them (see _post_fork).
        self.started_workers = multiprocessing.get_context("fork").Value("i", 0)
        super().__init__()

    def load_config(self) -> None:
        timeout = max(self.env.timeout_seconds, self.env.startup_timeout_seconds) + 30
        settings: dict[str, Any] = {
            "bind": [f"{self.options.host}:{self.options.port}"],
            "workers": self.options.workers,
            # uvicorn on uvloop with llhttp, request heads bounded (smkit/serving/worker.py).
            "worker_class": "smkit.serving.worker.ServingWorker",
            # One listening socket per worker: the kernel spreads new connections across workers.
            # With one shared socket, the first worker to wake accepts every waiting keep-alive
            # connection and the others idle.
            "reuse_port": True,
            "timeout": int(timeout),
            "graceful_timeout": GRACEFUL_SECONDS,
            "preload_app": False,
            "control_socket_disable": True,
            "proc_name": "smkit-serving",
            "loglevel": "warning",
            "accesslog": None,
            "when_ready": self._when_ready,
            "post_fork": self._post_fork,
            "worker_exit": _worker_exit,
        }
        for key, value in settings.items():
            if key in self.cfg.settings:
                self.cfg.set(key, value)

    def load(self) -> ServingApp:
        return self.serving_app

    def _when_ready(self, arbiter: Any) -> None:
        single = self.serving_app.single
        if single is None or self.handler is None or self.options.load_after_fork:
            return
        listener = shared_listener(self.options.host, self.options.port)
        # The responder sleeps until a request or the wake-up: no polling that would take the GIL
        # from the load, and the workers fork as soon as the model is loaded.
        wake_read, wake_write = socket.socketpair()
        # A stop signal during a long load ends the process now instead of after the load.
        previous = {sig: signal.signal(sig, _stop_loading) for sig in (signal.SIGTERM, signal.SIGINT)}
        responder = threading.Thread(target=_loading_responder, args=(listener, wake_read), daemon=True)
        responder.start()
        try:
            _load_single(single, self.handler)
        finally:
            wake_write.send(b"x")
            responder.join()
            for sock in (listener, wake_read, wake_write):
                sock.close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        # Objects alive now (the model, imported libraries) stay for the process's life: keep them out
        # of the collector's scans, and out of copy-on-write page faults after fork.
        gc.collect()
        gc.freeze()

    def _post_fork(self, arbiter: Any, worker: Any) -> None:
        # Until the worker installs its own handlers, the arbiter's inherited ones would swallow a stop
        # signal (queue it for a loop that never runs here) and leave the worker up until SIGKILL.
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
            signal.signal(sig, signal.SIG_DFL)
        _die_with_arbiter()
        deadline.install()
        self.serving_app.set_pid(os.getpid())
        single = self.serving_app.single
        if self.options.load_after_fork and single is not None and self.handler is not None:
            _load_single(single, self.handler)
        if self.on_worker_start is not None:
            self.on_worker_start()
        # gunicorn has bound this worker's socket already. gunicorn spawns workers up to 0.1 s apart, and
        # keep-alive connections opened while only the first one listens would all stay on it: /ping
        # answers 200 only once every worker listens, so traffic that follows /ping spreads over all.
        started = self.started_workers
        with started.get_lock():
            started.value += 1
        self.serving_app.set_workers_ready(lambda: started.value >= self.options.workers)
