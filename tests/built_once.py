"""Build a costly session fixture once per test run instead of once per pytest-xdist worker.

Session fixtures are per process: with ``-n 2`` each worker would run the same synth or training. A
fixture whose result is files builds them under :func:`built_once` instead, in a folder the run's workers
share (the session's own folder without xdist), under an exclusive lock; a worker that gets the lock after
the build finished reads the same files.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

BUILT = ".built"


@contextlib.contextmanager
def built_once(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[tuple[Path, bool]]:
    """``(folder, built)``: the shared folder ``name``, held under a lock while the block runs, and whether
    an earlier holder finished building it. The block touches ``folder / BUILT`` once its build succeeded
    (:func:`mark_built`); a failed build leaves it unmarked, and the next holder builds again."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = root / name
    folder.mkdir(exist_ok=True)
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield folder, (folder / BUILT).exists()


def mark_built(folder: Path) -> None:
    """Record that the build in ``folder`` succeeded."""
    (folder / BUILT).touch()
