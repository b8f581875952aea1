"""The per-invocation time limit (``SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS``), enforced with SIGALRM.

Worker processes handle one request at a time on their main thread, so an interval timer interrupts a
handler that runs too long with :class:`~smkit.serving.wire.errors.InvocationTimeout` (504). Code blocked
inside a C extension is interrupted when it returns to Python; a worker that never returns is killed by
the process manager's own, longer heartbeat timeout and replaced.

The limit counts from the request's arrival at the front end (SageMaker gives up on an invocation 60 s
after it was sent, however long it waited for a worker): the worker sets the job's deadline with
:func:`start_job`, and every timer armed during that job ends at the deadline at the latest.
"""

from __future__ import annotations

import _signal  # signal.getsignal's enum conversion costs microseconds per call
import signal
import threading
import time
from types import FrameType, TracebackType

from smkit.serving.wire.errors import timeout_error

_state = {"seconds": 0.0}
_job = {"until": 0.0}  # the running job's deadline (time.monotonic); 0: none


def start_job(until: float) -> None:
    """The worker runs a job whose deadline is ``until`` (``time.monotonic``; 0: none)."""
    _job["until"] = until


def extend_job(seconds: float) -> None:
    """Give the running job ``seconds`` more (a model load inside a request)."""
    if _job["until"]:
        _job["until"] += seconds


def job_until() -> float:
    """The running job's deadline (0: none)."""
    return _job["until"]


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise timeout_error(_state["seconds"])


def install() -> None:
    """Install the SIGALRM handler (call once in each worker process)."""
    signal.signal(signal.SIGALRM, _on_alarm)


class deadline:  # noqa: N801 - used as a function: ``with deadline(seconds):``
    """Raise :class:`InvocationTimeout` inside the ``with`` body after ``seconds`` (main thread only).

    ``limit``: the time limit the error message names, when ``seconds`` is only what is left of it.

    A class rather than a generator context manager: it runs around every invocation.
    """

    __slots__ = ("seconds", "armed", "limit")

    def __init__(self, seconds: float, limit: float | None = None) -> None:
        self.seconds = seconds
        self.armed = False
        self.limit = limit  # the limit the error names, when ``seconds`` is what is left of it

    def __enter__(self) -> None:
        if (
            self.seconds > 0
            and threading.get_ident() == threading.main_thread().ident
            and _signal.getsignal(signal.SIGALRM) is _on_alarm
        ):
            limit = self.seconds if self.limit is None else self.limit
            seconds = self.seconds
            if _job["until"]:
                seconds = min(seconds, _job["until"] - time.monotonic())
                if seconds <= 0:
                    raise timeout_error(limit)
            _state["seconds"] = limit
            signal.setitimer(signal.ITIMER_REAL, seconds)
            self.armed = True

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            self.armed = False
