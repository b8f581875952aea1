"""``wait_until``: the one way tests wait for something to happen (a port answering, a file appearing, a
process going away), instead of sleeps and hand-written polling loops."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    condition: Callable[[], T],
    *,
    timeout: float = 30.0,
    interval: float = 0.02,
    what: str | Callable[[], str] = "the condition",
) -> T:
    """Return the first truthy value of ``condition()``, called every ``interval`` seconds.

    Fails the test after ``timeout`` seconds with ``what`` (a string, or a function for a message computed
    at that moment, e.g. a server's log). ``condition`` may raise to give up early.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            message = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {message}")
        time.sleep(interval)
