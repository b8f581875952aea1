"""The serving process: one front end (uvicorn on uvloop) in front of fresh model-worker processes.

The front end binds the port, answers ``/ping`` from its first moment (503 until every worker has
loaded the model, docs/hosting-contract.md), reads requests and hands them to
:class:`~smkit.serving.pool.WorkerPool`. SIGTERM stops gracefully (in-flight requests finish, up to
:attr:`smkit.contract.RuntimeSettings.in_flight_grace_s`), SIGINT too; then the workers are stopped.
Workers die with the front end even when it is killed (``PR_SET_PDEATHSIG``). Architecture and settings:
docs/serving-runtime.md.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import sys
from collections.abc import Iterator
from typing import Any, NoReturn, cast

import uvicorn
import uvloop

from smkit.serving.frontend import FrontEnd
from smkit.serving.pool import WorkerPool
from smkit.serving.protocol import FrontEndProtocol

log = logging.getLogger("smkit.serving")


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, pool: WorkerPool) -> None:
        super().__init__(config)
        self.pool = pool

    def _on_stop_signal(self, sig: int, frame: Any) -> None:
        # From the signal on, a worker that exits is not replaced: the same signal may have reached the
        # workers too (a process group stopped at once), and they are stopped after the drain anyway.
        self.pool.stopping()
        self.handle_exit(sig, frame)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # uvicorn re-raises the stop signal after its shutdown, which would kill this process before
        # the workers are stopped and turn a clean stop into a signal exit status.
        previous = {sig: signal.signal(sig, self._on_stop_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def run(app: FrontEnd, pool: WorkerPool, sock: socket.socket, *, exit_on_load_failure: bool = False) -> int:
    """Serve ``app`` on ``sock`` until SIGTERM/SIGINT, then stop the workers; return the exit status.

    With ``exit_on_load_failure`` (``smkit serve``), also stop, with status 1, once every worker slot has
    given up loading the model: on this machine nobody else is waiting for ``/ping`` to turn 200. The
    image keeps serving 503 instead, as SageMaker's start-up health check expects.
    """
    config = uvicorn.Config(
        cast(Any, app),
        http=FrontEndProtocol,
        interface="asgi3",  # never called as ASGI: FrontEndProtocol calls the front end directly
        # /invocations-bidirectional-stream (smkit/serving/websocket.py). Pings come from the platform
        # (every 60 s; the protocol answers them); the server sends none of its own.
        ws="websockets-sansio",
        ws_ping_interval=None,
        lifespan="off",
        access_log=False,  # the front end writes one JSON line per request itself
        server_header=False,
        proxy_headers=False,
        log_config=None,
        log_level="warning",
        # SageMaker sends SIGKILL STOP_GRACE_S after SIGTERM (docs/hosting-contract.md).
        timeout_graceful_shutdown=int(app.env.settings.in_flight_grace_s),
    )
    server = _Server(config, pool)
    failed: list[str] = []

    def gave_up(error: str) -> None:
        failed.append(error)
        log.error("every worker slot gave up loading the model; stopping: %s", error)
        pool.stopping()
        server.should_exit = True

    if exit_on_load_failure:
        pool.on_gave_up = gave_up

    async def main() -> None:
        await pool.start()
        try:
            await server.serve(sockets=[sock])
        finally:
            app.flush_log()
            await pool.stop()

    uvloop.run(main())
    return 1 if failed else 0


def exit_now(code: int) -> NoReturn:
    """Flush and leave without interpreter teardown (seconds of CPU with large libraries loaded)."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    import os

    os._exit(code)
