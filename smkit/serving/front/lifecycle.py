"""The worker slots as a state machine: loading, ready, waiting to retry a failed load, given up.

Pure bookkeeping (no processes, no clock): :class:`~smkit.serving.front.pool.WorkerPool` reports what its
processes do and starts or schedules what this module decides, and ``/ping`` answers from it.

- A worker that exits while serving is replaced at once: it had loaded the model, so a fresh one will.
- A worker that fails to load (``model_fn`` raised, or the process died: an out-of-memory kill, a segfault
  in a C extension, ``os._exit``) loads again after a back-off of 1, 1, 2, 3, 5, ... s, capped at
  30 s (the Fibonacci back-off Multi Model Server's ``WorkerThread`` restarts its workers with); its new
  process is started at once and waits out the back-off before it imports the handler. Before
  the first ``/ping`` 200 a slot retries at most ``retries`` times in a row, then is given up: a model
  that does not load is reported instead of retried until SageMaker's start-up health check times out.
  Once the model has loaded in every slot, a failed reload is a passing condition (memory pressure, a
  killed process), so the slot keeps retrying with the capped back-off, as Multi Model Server does.
- ``/ping`` is 200 once every slot that is still trying has loaded the model (at least one has), and 503
  before, naming the last load error as soon as there is one. After that first 200 a worker being
  replaced does not fail ``/ping``; it turns 503 again only while no worker is ready and the last load
  failed (SageMaker replaces an instance whose pings keep failing).
- Nothing is started while the server stops.

docs/serving-runtime.md describes the behaviour for users.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from smkit.contract import LOAD_FAILED

STARTING, READY, FAILED = "starting", "ready", "failed"
RETRYING, GAVE_UP, STOPPED = "retrying", "gave up", "stopped"
BACKOFF_SECONDS = (1.0, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 21.0)
MAX_BACKOFF_SECONDS = 30.0
DEFAULT_RETRIES = 3
STILL_LOADING = "the model is still loading"
# LOAD_FAILED: /ping's 503 message once every slot has given up (the local endpoint and batch stop
# waiting on it, smkit/readiness.py).


@dataclass
class Slot:
    """One worker slot: its state and its consecutive failed loads."""

    state: str = STARTING
    failures: int = 0


@dataclass(frozen=True)
class Exit:
    """What follows a worker's exit: start a new one after ``delay`` seconds (None: never); log ``message``."""

    delay: float | None
    level: int
    message: str


def backoff(failures: int) -> float:
    """Seconds to wait before load attempt ``failures + 1``."""
    return min(MAX_BACKOFF_SECONDS, BACKOFF_SECONDS[min(failures, len(BACKOFF_SECONDS)) - 1])


class Lifecycle:
    """What every slot is doing, and what ``/ping`` says about it.

    Args:
        slots: the worker count.
        retries: failed loads in a row a slot may retry before it is given up.
    """

    def __init__(self, slots: int, retries: int = DEFAULT_RETRIES) -> None:
        self.slots = [Slot() for _ in range(slots)]
        self.retries = retries
        self.load_error: str | None = None  # the last failed load, in words
        self.latched = False  # every slot still trying was ready once: replacements keep /ping at 200
        self.stopping = False

    # -- events --------------------------------------------------------------------------------------
    def started(self, slot: int) -> None:
        """A process was started for ``slot``."""
        self.slots[slot].state = STARTING

    def ready(self, slot: int) -> None:
        """``slot``'s process loaded the model."""
        self.slots[slot] = Slot(READY, 0)
        self.not_ready()  # latches once every slot still trying is ready

    def load_failed(self, slot: int, error: str) -> None:
        """``slot``'s process reported that ``model_fn`` raised (it exits next)."""
        self.load_error = error
        self.slots[slot].state = FAILED

    def exited(self, slot: int, pid: int, how: str) -> Exit:
        """``slot``'s process ``pid`` exited (``how``: ``exit status N``, ``killed by SIGKILL``).

        Returns when to start a new process for the slot, if ever, and the log line that says so.
        """
        current = self.slots[slot]
        if self.stopping:
            current.state = STOPPED
            return Exit(
                None, logging.INFO, f"worker {pid} exited ({how}) while the server stops; not replaced"
            )
        if current.state == READY:
            current.state = STARTING
            return Exit(0.0, logging.WARNING, f"worker {pid} exited ({how}); starting a replacement")
        if current.state == STARTING:
            self.load_error = f"the worker exited ({how}) while loading the model"
        current.failures += 1
        if current.failures > self.retries and not self.latched:
            current.state = GAVE_UP
            ready = self.count(READY)
            return Exit(
                None,
                logging.ERROR,
                f"worker {pid} exited ({how}) after a failed load, {current.failures} in a row: worker slot "
                f"{slot} is given up ({ready} of {len(self.slots)} workers ready); last error: {self.load_error}",
            )
        current.state = RETRYING
        delay = backoff(current.failures)
        of = f"retry {current.failures}" if self.latched else f"retry {current.failures} of {self.retries}"
        return Exit(
            delay,
            logging.ERROR,
            f"worker {pid} exited ({how}) after a failed load; retrying in {delay:g} s ({of}); "
            f"error: {self.load_error}",
        )

    def stop(self) -> None:
        """The server is stopping: start nothing more."""
        self.stopping = True

    # -- questions -----------------------------------------------------------------------------------
    def count(self, *states: str) -> int:
        return sum(1 for s in self.slots if s.state in states)

    def not_ready(self) -> str | None:
        """Why ``/ping`` is 503 now (None: 200)."""
        ready = self.count(READY)
        trying = self.count(STARTING, FAILED, RETRYING)
        if not self.latched:
            if ready and not trying:
                self.latched = True
                return None
            if not trying:
                return f"{LOAD_FAILED}: {self.load_error}"
            if self.load_error is not None:
                return f"{STILL_LOADING}; a load failed and is being retried: {self.load_error}"
            return STILL_LOADING
        if ready:
            return None
        if not trying:
            return f"no worker is ready; the model failed to load: {self.load_error}"
        if any(s.failures for s in self.slots):
            return f"no worker is ready; the model failed to load and is being retried: {self.load_error}"
        return None

    def gave_up(self) -> bool:
        """Every slot was given up before the model ever loaded in all of them: nothing will load it."""
        return not self.latched and not self.stopping and self.count(GAVE_UP) == len(self.slots)

    def accepting(self) -> str | None:
        """Why a request cannot be queued now (None: it can; a worker is ready or being replaced)."""
        if self.count(READY) or (self.latched and self.count(STARTING, FAILED, RETRYING)):
            return None
        return self.not_ready() or STILL_LOADING
