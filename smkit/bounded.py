"""Checks bounded in CPU time instead of wall time: the packaging checks (handler, SavedModel) run in a
child process that may use ``cpu_s`` seconds of CPU, however long a busy machine makes that take.

Standard library only (Linux ``/proc`` for the CPU time; elsewhere the wall clock stands in for it).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

# A check bounded in CPU time is also stopped when it uses no CPU at all for as long as its CPU limit, at
# least MIN_IDLE_S (it waits: a lock, the network, input), and, as a last resort, after WALL_FACTOR times
# that limit of wall time. A busy machine slows a working check down but never stops it from using CPU
# (the CPU time advances in ticks of 10 ms; a process sharing two cores with twenty gets ~100 ms a second).
WALL_FACTOR = 30.0
MIN_IDLE_S = 10.0


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a live process, its threads and its waited-for children (Linux
    ``/proc/PID/stat``); None where that cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class LimitExceeded(RuntimeError):
    """A bounded run was stopped; the message says which limit and how much it had used."""

    def __init__(self, message: str, output: bytes, stderr: bytes) -> None:
        super().__init__(message)
        self.output, self.stderr = output, stderr


def run_bounded(
    command: Sequence[str],
    *,
    cpu_s: float,
    idle_s: float | None = None,
    wall_factor: float = WALL_FACTOR,
    **kwargs: object,
) -> subprocess.CompletedProcess[bytes]:
    """``subprocess.run(command, capture_output=True)`` bounded by ``cpu_s`` seconds of the process's CPU
    time, not wall time, so a busy machine does not fail a correct check. A process that uses no CPU for
    ``idle_s`` seconds (default: ``cpu_s``, at least :data:`MIN_IDLE_S`) is waiting, not working, and is
    stopped too; so is one still running after
    ``cpu_s * wall_factor`` seconds. Raises :class:`LimitExceeded` naming the limit it hit. Without
    ``/proc`` the wall clock stands in for the CPU time."""
    started = time.monotonic()
    idle_s = max(cpu_s, MIN_IDLE_S) if idle_s is None else idle_s
    progress = (0.0, started)  # CPU seconds last seen to grow, and when
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs) as proc:  # type: ignore[call-overload]
        while True:
            try:
                out, err = proc.communicate(timeout=0.2)
                return subprocess.CompletedProcess(command, proc.returncode, out, err)
            except subprocess.TimeoutExpired:
                now = time.monotonic()
                used = cpu_seconds(proc.pid)
                if used is None:
                    used = now - started
                if used > progress[0]:
                    progress = (used, now)
                if used > cpu_s:
                    message = f"used more than {cpu_s:g} s of CPU time ({now - started:.0f} s wall-clock)"
                elif now - progress[1] > idle_s:
                    message = (
                        f"used no CPU for {idle_s:g} s, after {used:.1f} s of CPU (it waits on something: "
                        "a lock, the network, input)"
                    )
                elif now - started > cpu_s * wall_factor:
                    message = f"did not finish within {cpu_s * wall_factor:g} s (using {used:.1f} s of CPU)"
                else:
                    continue
                proc.kill()
                out, err = proc.communicate()
                raise LimitExceeded(message, out, err) from None
