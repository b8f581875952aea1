"""Runtime-process control: start a server process in its own process group, wait until it answers, stop it.

The parts from which :mod:`smkit.ops.server_process` builds the one way the local endpoint's containers,
local batch transform, the emulated AWS (moto's server) and the tests start servers on 127.0.0.1 (the
benchmarks use them directly, to time a cold start themselves):

- :func:`free_port` picks a loopback port;
- :func:`start_group` starts the command as the leader of a new process group (so stopping it also ends the
  workers it forks) which, on Linux, receives a signal when the process that started it dies
  (:func:`die_with_parent`, ``PR_SET_PDEATHSIG``), so no server outlives a killed parent;
- :func:`wait_ready` waits until a probe (``GET /ping`` for a serving runtime, see :func:`ping`) succeeds,
  failing early when the process exits;
- :func:`stop_group` sends SIGTERM to the group, then SIGKILL to whatever is left after a grace period
  (SageMaker gives a container 30 s, docs/hosting-contract.md).

Standard library only: the serving runtime imports it too.
"""

from __future__ import annotations

import abc
import atexit
import contextlib
import ctypes
import ctypes.util
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Protocol

from smkit.contract import PING_TIMEOUT_S, READINESS_PROBE_AGENT

if TYPE_CHECKING:
    from typing import Self

HOST = "127.0.0.1"
POLL_S = 0.05
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NAME = 15

# Groups started here and not stopped yet: killed when this interpreter exits, whatever way it exits.
_live_groups: set[int] = set()


@atexit.register
def _kill_leftovers() -> None:
    for pgid in list(_live_groups):
        signal_group(pgid, signal.SIGKILL)
    _live_groups.clear()


class ProcessStartError(RuntimeError):
    """A process exited, or never became ready, while being started; the message says which and why."""


class LoadFailed(RuntimeError):
    """Raised by a readiness probe: the runtime reports that the model failed to load in every worker slot
    (smkit/readiness.py); the message summarizes the wait and gives the reason."""


class Stoppable(abc.ABC):
    """A running server that a ``with`` block stops when it ends (:meth:`stop`)."""

    @abc.abstractmethod
    def stop(self) -> object:
        """Stop it and whatever it started; idempotent."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class Tally(Protocol):
    """What a start's probes saw, in one line (:class:`smkit.readiness.PingTally`)."""

    def summary(self) -> str: ...


def port_taken(port: int, host: str = HOST) -> bool:
    """True when ``port`` cannot be bound on ``host`` right now: another socket holds it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # SO_REUSEADDR: connections the stopped server left in TIME_WAIT do not count as taken.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def free_port(host: str = HOST, *, below: int | None = None, count: int = 1) -> int:
    """A TCP port on ``host`` that nothing listens on right now.

    The kernel picks it, from its ephemeral range (32768 and up on Linux); ``below`` asks for one under
    that number instead, tried at random from 20000 up (Multi Model Server refuses ports >= 32767).
    ``count`` asks for that many consecutive free ports and returns the first (TF Serving's gRPC and REST
    ports at the bottom of ``SAGEMAKER_SAFE_PORT_RANGE``, docs/tensorflow-serving.md).
    """
    limit = 65536 if below is None else below
    rng = random.Random()
    for _ in range(200):
        with contextlib.ExitStack() as held:
            first = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            try:
                first.bind((host, 0 if below is None else rng.randrange(20000, below - count + 1)))
                port: int = first.getsockname()[1]
                if port + count > limit:
                    continue
                for offset in range(1, count):
                    held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)).bind(
                        (host, port + offset)
                    )
            except OSError:
                continue
            return port
    ports = "free port" if count == 1 else f"{count} consecutive free ports"
    raise OSError(f"no {ports} on {host}" + ("" if below is None else f" in 20000-{below - 1}"))


@cache
def _libc() -> ctypes.CDLL | None:
    """The C library; None where there is none.

    First the symbols the interpreter already has loaded (``dlopen(NULL)``), which hold the C library it
    is linked with whatever its name (``libc.so.6`` is glibc's only): no search. Searching by name
    (``ctypes.util.find_library``) runs ``ldconfig -p`` in a child process, which a server start would
    pay twice on its way to the first answer (the front end and the worker template)."""
    try:
        own = ctypes.CDLL(None, use_errno=True)
        if hasattr(own, "prctl") or not sys.platform.startswith("linux"):
            return own
    except OSError:
        pass
    try:
        return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    except OSError:
        return None


def die_with_parent(sig: int = signal.SIGTERM) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent thread exits (Linux only).

    Meant as ``preexec_fn`` of a child, or called first thing in a worker. Returns False where the
    platform has no ``prctl`` (the caller's atexit and process-group cleanup still apply).
    """
    if not sys.platform.startswith("linux"):
        return False
    libc = _libc()
    if libc is None:
        return False
    return bool(libc.prctl(_PR_SET_PDEATHSIG, sig) == 0)


def adopt_orphans() -> bool:
    """Become the reaper of this process's orphaned descendants (Linux only): a process forked by a child
    whose parent then exits becomes this process's child, which it can wait for. False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    libc = _libc()
    if libc is None:
        return False
    return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1) == 0)


def name_process(name: str) -> bool:
    """Set this process's name as ``ps -o comm``, ``top`` and ``/proc/PID/comm`` show it (Linux only, at
    most 15 bytes; children forked later inherit it). False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    libc = _libc()
    if libc is None:
        return False
    return bool(libc.prctl(_PR_SET_NAME, name.encode()[:15]) == 0)


def _die_with_parent_preexec() -> None:
    # Runs in the child between fork and exec: no exceptions may escape.
    with contextlib.suppress(Exception):
        die_with_parent(signal.SIGTERM)


def start_group(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    log: IO[bytes] | int | None = subprocess.DEVNULL,
    cwd: str | Path | None = None,
    tie_to_parent: bool = True,
) -> subprocess.Popen[bytes]:
    """Start ``command`` as the leader of a new process group (its pid is the group id).

    Output goes to ``log`` (stderr with it; None inherits ours). ``tie_to_parent``: the child gets SIGTERM
    when the thread that started it exits, and the group is killed when this interpreter exits, so a
    killed parent leaves no server behind. Servers meant to outlive their starter pass False.
    """
    process = subprocess.Popen(
        list(command),
        env=dict(env) if env is not None else None,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT if log is not None else None,
        start_new_session=True,
        preexec_fn=_die_with_parent_preexec if tie_to_parent else None,  # noqa: PLW1509 - sets only a signal
    )
    if tie_to_parent:
        _live_groups.add(process.pid)
    return process


class Signallable(Protocol):
    """A child process that can be polled and signalled (``subprocess.Popen`` and its stand-ins)."""

    def poll(self) -> int | None: ...

    def send_signal(self, sig: int) -> None: ...


def signal_process(proc: Signallable, sig: int) -> None:
    """Send ``sig`` to ``proc`` unless it has already exited."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)


def describe_exit(status: int) -> str:
    """A Popen return code in words: ``exit status N`` or ``killed by SIGNAME``."""
    if status < 0:
        return f"killed by {signal.Signals(-status).name}"
    return f"exit status {status}"


def signal_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to every process of group ``pgid``; a group that is gone is not an error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is still there (zombies of our own children count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_group(process: subprocess.Popen[bytes], *, grace_s: float = 10.0) -> int | None:
    """SIGTERM ``process``'s group, SIGKILL what is left after ``grace_s``; return the leader's exit code.

    Workers may outlive their leader, so the group is always sent SIGKILL at the end.
    """
    signal_group(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace_s)
    signal_group(process.pid, signal.SIGKILL)
    _live_groups.discard(process.pid)
    return process.wait()


def ping(
    port: int, *, host: str = HOST, path: str = "/ping", timeout_s: float = PING_TIMEOUT_S
) -> tuple[int, bytes]:
    """``GET path``: the status and body, or ``(0, b"")`` when nothing answers (yet)."""
    import http.client  # here: the serving front end imports this module before it starts its workers

    conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
    try:
        conn.request("GET", path, headers={"User-Agent": READINESS_PROBE_AGENT})
        response = conn.getresponse()
        return response.status, response.read()
    except OSError:
        return 0, b""
    finally:
        conn.close()


def log_tail(path: Path | None, lines: int = 20) -> str:
    """The last ``lines`` lines of a log file, for error messages."""
    if path is None or not path.is_file():
        return "(no log)"
    text = path.read_text(errors="replace").splitlines()[-lines:]
    return "\n".join(text) or "(empty)"


# A record of the runtime's log starts with its time stamp (smkit/serving/front/launch.py's logging format).
RECORD_START = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
LOAD_ERROR_RECORD = "model load failed in worker"  # smkit/serving/front/pool.py


def load_error_record(log_path: Path | None) -> str | None:
    """The runtime's logged load error with its traceback (the first one in ``log_path``), or None."""
    if log_path is None or not log_path.is_file():
        return None
    lines = log_path.read_text(errors="replace").splitlines()
    for index, line in enumerate(lines):
        if LOAD_ERROR_RECORD in line:
            record = [line]
            for following in lines[index + 1 :]:
                if RECORD_START.match(following):
                    break
                record.append(following)
            return "\n".join(record)
    return None


class StartWatch:
    """A start being waited for and how it can fail: ``process`` exits, or ``timeout_s`` runs out. ``name``
    names it in the errors, which quote the end of ``log_path`` (None: the output is the caller's), what
    ``tally`` (the probes' answers) saw and ``limit`` (which setting sets ``timeout_s``). The clock starts
    when it is made."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        name: str,
        timeout_s: float,
        log_path: Path | None,
        tally: Tally | None = None,
        limit: str = "",
    ):
        self.process, self.name, self.timeout_s, self.log_path = process, name, timeout_s, log_path
        self.tally, self.limit = tally, limit
        self.deadline = time.monotonic() + timeout_s

    def load_failed(self, exc: LoadFailed) -> ProcessStartError:
        """The model failed to load in every worker slot: say so once, with the logged traceback."""
        record = load_error_record(self.log_path)
        if record:
            where = f"the load error, from {self.log_path}:\n{record}"
        else:
            where = "its traceback is in the output above" if self.log_path is None else self._tail()
        return ProcessStartError(f"{self.name} cannot serve: {exc}; {where}")

    def check_running(self) -> None:
        code = self.process.poll()
        if code is not None:
            raise ProcessStartError(
                f"{self.name} exited with code {code} before it was ready; {self._tail()}"
            )

    def check_time(self) -> None:
        if time.monotonic() >= self.deadline:
            waited = f" ({self.tally.summary()})" if self.tally else ""
            limit = f"; {self.limit}" if self.limit else ""
            raise ProcessStartError(
                f"{self.name} was not ready within {self.timeout_s:.0f} s{waited}{limit}; {self._tail()}"
            )

    def _tail(self) -> str:
        if self.log_path is None:
            return "see its output above"
        return f"last lines of {self.log_path}:\n{log_tail(self.log_path)}"


def wait_ready(watch: StartWatch, ready: Callable[[], bool]) -> None:
    """Return once ``ready()`` is true; raise :class:`ProcessStartError` if the process exits or time runs out.

    ``ready`` may raise :class:`ProcessStartError`, or :class:`~smkit.readiness.LoadFailed` (a runtime whose
    model failed to load keeps answering 503: waiting longer cannot help), to give up early.
    """
    while True:
        watch.check_running()
        try:
            if ready():
                return
        except LoadFailed as exc:
            raise watch.load_failed(exc) from None
        watch.check_time()
        time.sleep(POLL_S)


async def await_ready(watch: StartWatch, ready: Callable[[], Awaitable[bool]]) -> None:
    """:func:`wait_ready` for an event loop: ``ready`` is a coroutine function, the wait never blocks."""
    import asyncio  # here: the serving front end imports this module before it starts its workers

    while True:
        watch.check_running()
        try:
            if await ready():
                return
        except LoadFailed as exc:
            raise watch.load_failed(exc) from None
        watch.check_time()
        await asyncio.sleep(POLL_S)


def runtime_command(
    model: str | Path,
    *,
    port: int,
    multi_model: bool = False,
    workers: int | None = None,
    python: str = sys.executable,
    host: str = HOST,
) -> list[str]:
    """``python -m smkit.serving --model|--multi-model PATH --host H --port P [--workers N]``."""
    command = [python, "-m", "smkit.serving", "--multi-model" if multi_model else "--model", str(model)]
    command += ["--host", host, "--port", str(port)]
    if workers:
        command += ["--workers", str(workers)]
    return command
