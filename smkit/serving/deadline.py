"""The per-invocation time limit (``SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS``), enforced with SIGALRM.

Worker processes handle one request at a time on their main thread, so an interval timer interrupts a
handler that runs too long with :class:`~smkit.serving.errors.InvocationTimeout` (504). Code blocked
inside a C extension is interrupted when it returns to Python; a worker that never returns is killed by
the process manager's own, longer heartbeat timeout and replaced.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from smkit.serving.errors import InvocationTimeout

_state = {"seconds": 0.0}


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise InvocationTimeout(
        f"the model did not answer within {_state['seconds']:g} s "
        "(SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS); raise the limit or speed up the handler"
    )


def install() -> None:
    """Install the SIGALRM handler (call once in each worker process)."""
    signal.signal(signal.SIGALRM, _on_alarm)


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise :class:`InvocationTimeout` inside the body after ``seconds`` (main thread only)."""
    if (
        seconds <= 0
        or threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGALRM) is not _on_alarm
    ):
        yield
        return
    _state["seconds"] = seconds
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
