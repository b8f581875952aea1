"""Competing CPU load for a benchmark: busy loops in sessions of their own, at the default priority.

Each hog is ``python -c 'while True: pass'`` started with ``start_new_session`` (so the kernel's
autogroup scheduling treats it as another user's job) and nice 0, whatever the harness's own priority.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager


def _default_priority() -> None:
    os.setpriority(os.PRIO_PROCESS, 0, 0)


@contextmanager
def cpu_hogs(count: int) -> Iterator[list[int]]:
    """Run ``count`` busy loops while the block runs; yield their pids."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", "while True: pass"],
                    start_new_session=True,
                    preexec_fn=_default_priority,  # noqa: PLW1509 - no threads exist in the child yet
                    stdin=subprocess.DEVNULL,
                )
            )
        yield [p.pid for p in procs]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
