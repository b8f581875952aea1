"""Start a server process on 127.0.0.1 and wait until it answers: the one way smkit does it.

The local endpoint's containers, local batch transform, moto's server (the emulated AWS) and the tests
start servers through :meth:`ServerProcess.start` (blocking) or :meth:`ServerProcess.astart` (on an event
loop). Both follow the same rules:

- **one port rule**: a fixed port is used as given, and refused at once when something holds it;
  otherwise a free port is picked (:func:`smkit.process.free_port`). A free port cannot be reserved, so
  another process may bind it first: when a start fails and the port turns out taken
  (:func:`smkit.process.port_taken`), the start moves on to a fresh port, :data:`PORT_ATTEMPTS` times at
  most; a start that failed for its own reasons is not retried;
- **one readiness rule**: ``GET`` of the launch's ``ready_path`` (``/ping`` for a serving runtime)
  answers 200. The probes carry the readiness agent that the runtime does not access-log, their answers
  are tallied (:class:`smkit.readiness.PingTally`), a runtime whose model failed to load in every worker
  slot gives up at once, and a process that exits is reported at once with the end of its log
  (:func:`smkit.process.wait_ready`);
- the process runs as the leader of its own process group, tied to its starter unless it is meant to
  outlive it, and :meth:`ServerProcess.stop` ends the whole group (SIGTERM, then SIGKILL after the grace
  period).

Standard library only below :mod:`smkit.process`.
"""

from __future__ import annotations

import asyncio
import http.client
import io
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from smkit.contract import DEFAULT_STARTUP_HEALTH_CHECK_S, PING_TIMEOUT_S, READINESS_PROBE_AGENT, STOP_GRACE_S
from smkit.process import (
    HOST,
    ProcessStartError,
    StartWatch,
    Stoppable,
    free_port,
    ping,
    port_taken,
    start_group,
    stop_group,
)
from smkit.process import await_ready as _await_ready
from smkit.process import wait_ready as _wait_ready
from smkit.readiness import PingTally

# How many fresh ports a start tries when the port it picked turns out taken by someone else.
PORT_ATTEMPTS = 3


@dataclass(frozen=True)
class Launch:
    """How to start one server and when it counts as ready.

    ``command`` and ``environment`` are given the port the server is started on (a runtime reads it from
    ``--port`` or ``SAGEMAKER_BIND_TO_PORT``, moto from ``-p``); ``environment`` returns the whole
    environment (None: this process's). Output goes to ``log_path`` (appended), else to this process's
    own output, or nowhere with ``discard_output``. ``limit`` names the setting behind ``timeout_s`` in the
    error of a start that timed out. ``tie_to_parent=False``: the server outlives this process.
    """

    name: str
    command: Callable[[int], Sequence[str]]
    environment: Callable[[int], Mapping[str, str]] | None = None
    log_path: Path | None = None
    discard_output: bool = False
    timeout_s: float = DEFAULT_STARTUP_HEALTH_CHECK_S
    limit: str = ""
    ready_path: str = "/ping"
    port: int | None = None
    cwd: Path | None = None
    tie_to_parent: bool = True
    stop_grace_s: float = STOP_GRACE_S

    def ports(self) -> list[int]:
        """The ports to try, in order: the fixed one (refused when taken), else fresh free ones."""
        if self.port is None:
            return [0] * PORT_ATTEMPTS  # 0: a free port, picked when the attempt starts
        if port_taken(self.port):
            raise ProcessStartError(f"{self.name}: port {self.port} is already in use; pick another port")
        return [self.port]

    def spawn(self, port: int) -> subprocess.Popen[bytes]:
        """Start the command for ``port`` in its own process group, output as :class:`Launch` says."""
        log: IO[bytes] | int | None = subprocess.DEVNULL if self.discard_output else None
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            log = self.log_path.open("ab")
        env = self.environment(port) if self.environment is not None else None
        try:
            return start_group(
                self.command(port), env=env, log=log, cwd=self.cwd, tie_to_parent=self.tie_to_parent
            )
        finally:
            if isinstance(log, io.IOBase):
                log.close()  # the child holds its own descriptor

    def retry(self, error: BaseException, port: int, attempt: int) -> bool:
        """Whether a failed start moves on to a fresh port: someone else bound the free port it picked."""
        return (
            self.port is None
            and isinstance(error, ProcessStartError)
            and attempt < PORT_ATTEMPTS
            and port_taken(port)
        )


def probe_path(port: int, path: str) -> tuple[int, bytes]:
    """``GET path`` on 127.0.0.1:``port`` as the readiness probe: status and body, ``(0, b"")`` when nothing
    answers (yet)."""
    return ping(port, path=path)


async def aprobe_path(port: int, path: str, *, timeout_s: float = PING_TIMEOUT_S) -> tuple[int, bytes]:
    """:func:`probe_path` on an event loop: one connection, ``Connection: close``, read to its end."""
    try:
        async with asyncio.timeout(timeout_s):
            reader, writer = await asyncio.open_connection(HOST, port)
            try:
                writer.write(
                    f"GET {path} HTTP/1.1\r\nHost: {HOST}:{port}\r\nUser-Agent: {READINESS_PROBE_AGENT}\r\n"
                    "Connection: close\r\n\r\n".encode("latin-1")
                )
                await writer.drain()
                answer = await reader.read()
            finally:
                writer.close()
    except (OSError, TimeoutError):
        return 0, b""
    return _parse_answer(answer)


class _Received:
    """A socket stand-in over bytes already read, for :class:`http.client.HTTPResponse` to parse."""

    def __init__(self, data: bytes) -> None:
        self._file = io.BytesIO(data)

    def makefile(self, *_args: object, **_kwargs: object) -> io.BytesIO:
        return self._file


def _parse_answer(data: bytes) -> tuple[int, bytes]:
    response = http.client.HTTPResponse(_Received(data))  # type: ignore[arg-type]
    try:
        response.begin()
        return response.status, response.read()
    except (http.client.HTTPException, OSError, ValueError):
        return 0, b""


class ServerProcess(Stoppable):
    """A server process started by :meth:`start` or :meth:`astart` and answering on :attr:`port`."""

    def __init__(self, launch: Launch, process: subprocess.Popen[bytes], port: int) -> None:
        self.launch = launch
        self.process = process
        self.port = port

    @property
    def pid(self) -> int:
        """The process id, which is also its process group's id."""
        return self.process.pid

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://{HOST}:{self.port}"

    @property
    def running(self) -> bool:
        """True while the process lives."""
        return self.process.poll() is None

    @classmethod
    def spawn(cls, launch: Launch, port: int | None = None) -> ServerProcess:
        """Start the server on ``port`` (default: the launch's, else a free one) without waiting for it: for
        a caller that watches the start itself, then calls :meth:`wait`."""
        chosen = port or launch.port or free_port()
        return cls(launch, launch.spawn(chosen), chosen)

    def wait(self, timeout_s: float | None = None) -> None:
        """Return once ``GET ready_path`` answers 200 (the readiness rule, see the module docstring); raise
        :class:`~smkit.process.ProcessStartError` when the process exits, the model cannot load, or
        ``timeout_s`` (default: the launch's) runs out. The process is left as it is either way."""
        path, tally = self.launch.ready_path, PingTally(self.launch.ready_path)
        _wait_ready(self._watch(tally, timeout_s), lambda: tally.observe(*probe_path(self.port, path)))

    async def await_ready(self) -> None:
        """:meth:`wait` on an event loop: the probes never block the loop."""
        path, tally = self.launch.ready_path, PingTally(self.launch.ready_path)

        async def ready() -> bool:
            return tally.observe(*await aprobe_path(self.port, path))

        await _await_ready(self._watch(tally), ready)

    def _watch(self, tally: PingTally, timeout_s: float | None = None) -> StartWatch:
        launch = self.launch
        timeout_s = launch.timeout_s if timeout_s is None else timeout_s
        return StartWatch(self.process, launch.name, timeout_s, launch.log_path, tally, launch.limit)

    @classmethod
    def start(cls, launch: Launch) -> ServerProcess:
        """Start the server and return once it is ready (the port rule and the readiness rule of the module
        docstring); :class:`~smkit.process.ProcessStartError` otherwise, with nothing left running."""
        for attempt, chosen in enumerate(launch.ports(), 1):
            server = cls.spawn(launch, chosen)
            try:
                server.wait()
            except BaseException as exc:
                server.stop()
                if launch.retry(exc, server.port, attempt):
                    continue
                raise
            return server
        raise AssertionError("unreachable: the last attempt returns or raises")

    @classmethod
    async def astart(cls, launch: Launch) -> ServerProcess:
        """:meth:`start` for an event loop: the wait never blocks the loop."""
        for attempt, chosen in enumerate(launch.ports(), 1):
            server = cls.spawn(launch, chosen)
            try:
                await server.await_ready()
            except BaseException as exc:
                await server.astop()
                if launch.retry(exc, server.port, attempt):
                    continue
                raise
            return server
        raise AssertionError("unreachable: the last attempt returns or raises")

    def stop(self) -> int | None:
        """SIGTERM the process group, SIGKILL what is left after the launch's grace period; the exit code."""
        return stop_group(self.process, grace_s=self.launch.stop_grace_s)

    async def astop(self) -> int | None:
        """:meth:`stop` without blocking the event loop."""
        return await asyncio.to_thread(self.stop)
