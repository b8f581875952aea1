"""The serving process: one front end (:mod:`smkit.http1` on uvloop) in front of fresh model-worker processes.

The front end binds the port, answers ``/ping`` from its first moment (503 until every worker has
loaded the model, docs/hosting-contract.md), reads requests and hands them to
:class:`~smkit.serving.front.pool.WorkerPool`. SIGTERM stops gracefully (in-flight requests finish, up to
``RuntimeSettings.in_flight_grace_s``, :mod:`smkit.contract`), SIGINT too; the signal is not re-raised, so the
workers are stopped next and the exit status is the process's own. Workers die with the front end even when
it is killed (``PR_SET_PDEATHSIG``). Architecture and settings: docs/serving-runtime.md.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import sys
from typing import NoReturn

import uvloop

from smkit.http1 import Server
from smkit.serving.front.exchange import runtime_refusal
from smkit.serving.front.frontend import FrontEnd
from smkit.serving.front.pool import WorkerPool

log = logging.getLogger("smkit.serving")
KEEP_ALIVE_SECONDS = 5  # an idle client connection is closed after 5 to 10 s


def run(app: FrontEnd, pool: WorkerPool, sock: socket.socket, *, exit_on_load_failure: bool = False) -> int:
    """Serve ``app`` on ``sock`` until SIGTERM/SIGINT, then stop the workers; return the exit status.

    With ``exit_on_load_failure`` (``smkit serve``), also stop, with status 1, once every worker slot has
    given up loading the model: on this machine nobody else is waiting for ``/ping`` to turn 200. The
    image keeps serving 503 instead, as SageMaker's start-up health check expects.
    """

    def stopping(sig: int) -> None:
        # From the signal on, a worker that exits is not replaced: the same signal may have reached the
        # workers too (a process group stopped at once), and they are stopped after the drain anyway.
        pool.stopping()

    server = Server(
        app,
        refusal=runtime_refusal,
        keep_alive_seconds=KEEP_ALIVE_SECONDS,
        # SageMaker sends SIGKILL STOP_GRACE_S after SIGTERM (docs/hosting-contract.md).
        grace_seconds=app.env.settings.in_flight_grace_s,
        on_signal=stopping,
    )
    failed: list[str] = []

    def gave_up(error: str) -> None:
        failed.append(error)
        log.error("every worker slot gave up loading the model; stopping: %s", error)
        pool.stopping()
        server.stop()

    if exit_on_load_failure:
        pool.on_gave_up = gave_up

    async def main() -> None:
        await pool.start()
        try:
            await server.serve(sock, signals=True)
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
