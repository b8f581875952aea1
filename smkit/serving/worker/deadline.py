"""The per-invocation time limit (``SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS``), enforced with SIGALRM.

A worker that handles one request at a time runs it on its main thread, so an interval timer interrupts
a handler that runs too long with :class:`~smkit.serving.wire.errors.InvocationTimeout` (504). Code blocked
inside a C extension is interrupted when it returns to Python; a worker that never returns is killed by
the process manager's own, longer heartbeat timeout and replaced.

A worker that runs several requests at once (``SMKIT_WORKER_CONCURRENCY``, smkit/serving/worker/concurrency.py)
runs each on a thread of its own, where no signal arrives: there a watchdog thread raises the same
error in the request's thread at its deadline (``PyThreadState_SetAsyncExc``, which interrupts Python
code as a signal handler does; a wait inside C code, ``time.sleep`` included, ends first). The error is
raised at most once per armed deadline and a pending one is withdrawn when the deadline is disarmed, so
it never lands in the worker's own code after the handler returned.

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

from smkit.serving.wire.errors import InvocationTimeout, timeout_error


class _Job(threading.local):
    until = 0.0  # the running job's deadline (time.monotonic); 0: none
    limit = 0.0  # the limit an armed deadline names in its error


_job = _Job()  # per thread: a worker with SMKIT_WORKER_CONCURRENCY runs jobs on several


def start_job(until: float) -> None:
    """The worker runs a job whose deadline is ``until`` (``time.monotonic``; 0: none)."""
    _job.until = until


def extend_job(seconds: float) -> None:
    """Give the running job ``seconds`` more (a model load inside a request)."""
    if _job.until:
        _job.until += seconds


def job_until() -> float:
    """The running job's deadline (0: none)."""
    return _job.until


def job_limit() -> float:
    """The limit the innermost armed deadline of this thread names (0: none armed yet)."""
    return _job.limit


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise timeout_error(_job.limit)


def install() -> None:
    """Install the SIGALRM handler (call once in each worker process)."""
    signal.signal(signal.SIGALRM, _on_alarm)


class _Watchdog:
    """Deadlines of code running on threads other than the main one: one thread sleeps until the earliest
    and raises :class:`InvocationTimeout` in the thread it belongs to."""

    def __init__(self) -> None:
        import ctypes  # only a worker running requests side by side needs it

        self._set_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
        self._ulong = ctypes.c_ulong
        self._object = ctypes.py_object
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._armed: dict[int, tuple[float, float]] = {}  # thread id -> (deadline, limit it names)
        self._classes: dict[float, type[InvocationTimeout]] = {}
        threading.Thread(target=self._run, name="smkit-deadlines", daemon=True).start()

    def arm(self, ident: int, until: float, limit: float) -> None:
        with self._lock:
            self._armed[ident] = (until, limit)
            self._wake.notify()

    def disarm(self, ident: int) -> None:
        """Forget the thread's deadline and withdraw its error if raised and not yet delivered."""
        with self._lock:
            self._armed.pop(ident, None)
            self._set_exc(self._ulong(ident), None)

    def _error(self, limit: float) -> type[InvocationTimeout]:
        # An error raised in another thread is a class, instantiated there without arguments.
        kind = self._classes.get(limit)
        if kind is None:
            message = timeout_error(limit).message

            def __init__(self: InvocationTimeout, text: str = message) -> None:  # noqa: N807
                InvocationTimeout.__init__(self, text)

            kind = self._classes[limit] = type(
                "InvocationTimeout", (InvocationTimeout,), {"__init__": __init__}
            )
        return kind

    def _run(self) -> None:
        with self._lock:
            while True:
                now = time.monotonic()
                for ident, (until, limit) in list(self._armed.items()):
                    if until <= now:
                        del self._armed[ident]  # raised once: a later disarm only withdraws it
                        self._set_exc(self._ulong(ident), self._object(self._error(limit)))
                earliest = min((until for until, _ in self._armed.values()), default=None)
                self._wake.wait(None if earliest is None else max(0.0, earliest - now))


_watchdog: list[_Watchdog] = []


def watch_threads() -> None:
    """Enforce deadlines on every thread of this process too (a worker running requests side by side)."""
    if not _watchdog:
        _watchdog.append(_Watchdog())


class deadline:  # noqa: N801 - used as a function: ``with deadline(seconds):``
    """Raise :class:`InvocationTimeout` inside the ``with`` body after ``seconds`` (the main thread; other
    threads once :func:`watch_threads` has been called).

    ``limit``: the time limit the error message names, when ``seconds`` is only what is left of it.

    A class rather than a generator context manager: it runs around every invocation.
    """

    __slots__ = ("seconds", "armed", "limit", "watched")

    def __init__(self, seconds: float, limit: float | None = None) -> None:
        self.seconds = seconds
        self.armed = False
        self.watched = 0  # the thread whose deadline the watchdog holds
        self.limit = limit  # the limit the error names, when ``seconds`` is what is left of it

    def __enter__(self) -> None:
        if self.seconds <= 0:
            return
        ident = threading.get_ident()
        main = ident == threading.main_thread().ident
        if main and _signal.getsignal(signal.SIGALRM) is not _on_alarm or not main and not _watchdog:
            return
        limit = self.seconds if self.limit is None else self.limit
        seconds = self.seconds
        if _job.until:
            seconds = min(seconds, _job.until - time.monotonic())
            if seconds <= 0:
                raise timeout_error(limit)
        _job.limit = limit
        if main:
            signal.setitimer(signal.ITIMER_REAL, seconds)
            self.armed = True
        else:
            _watchdog[0].arm(ident, time.monotonic() + seconds, limit)
            self.watched = ident

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            self.armed = False
        elif self.watched:
            ident, self.watched = self.watched, 0
            try:
                _watchdog[0].disarm(ident)
            except InvocationTimeout:  # raised as the body ended, before the error was withdrawn
                _watchdog[0].disarm(ident)  # raised once only: nothing can be pending any more
