"""The front end's side of the worker template (smkit/serving/worker/template.py): workers forked, not exec'd.

:class:`Template` starts ``python -m smkit.serving.worker.template`` (the workers' interpreter and environment)
and asks it for a worker per :meth:`Template.fork`; the request is sent at once and its answer (the
worker's process id) read only when the pid is first needed, so the front end goes on starting while the
template imports the runtime. Each worker is a :class:`ForkedProcess`: the front end's own child (it is
the reaper of its orphaned descendants), waited for with ``waitpid`` like a ``subprocess.Popen``.

When the template cannot fork (it exited, or answered an error), that worker counts as a failed start
(exit status 1, the usual retry) and every later worker is started as a fresh interpreter.
"""

from __future__ import annotations

import array
import contextlib
import json
import logging
import os
import socket
import subprocess
import threading
from collections import deque
from collections.abc import Mapping
from typing import Any

from smkit.process import adopt_orphans
from smkit.serving.wire.messages import FD_KEYS

log = logging.getLogger("smkit.serving")
TEMPLATE_MODULE = "smkit.serving.worker.template"
FAILED = 1  # the exit status of a worker the template could not fork


class Template:
    """A running template process and the requests sent to it whose answers are not read yet."""

    def __init__(self, python: str, environ: Mapping[str, str]) -> None:
        if not adopt_orphans():
            raise OSError("this platform cannot adopt forked workers (PR_SET_CHILD_SUBREAPER)")
        self._sock, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [python, "-m", TEMPLATE_MODULE, str(child.fileno())],
                pass_fds=(child.fileno(),),
                env=dict(environ),
                stdin=subprocess.DEVNULL,
            )
        except OSError:
            self._sock.close()
            raise
        finally:
            child.close()
        self._waiting: deque[ForkedProcess] = deque()
        self._lock = threading.Lock()
        self.broken = False

    def fork(self, config: Mapping[str, Any]) -> ForkedProcess:
        """Ask for a worker for ``config``; its descriptors (:data:`FD_KEYS`) travel with the request."""
        proc = ForkedProcess(self)
        message = json.dumps(config).encode()
        fds = [int(config[key]) for key in FD_KEYS if key in config]
        rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
        with self._lock:
            try:
                self._sock.sendmsg([message], rights)
            except OSError as exc:
                self._give_up(f"it cannot be reached ({exc})")
                proc.resolved(0)
                return proc
            self._waiting.append(proc)
        return proc

    def resolve(self, proc: ForkedProcess) -> None:
        """Read answers until ``proc``'s pid is known."""
        with self._lock:
            while proc in self._waiting:
                first = self._waiting.popleft()
                try:
                    answer = self._sock.recv(4096).decode()
                except OSError as exc:
                    answer = f"error: {exc}"
                if answer.isdigit():
                    first.resolved(int(answer))
                else:
                    self._give_up(answer or "it exited")
                    first.resolved(0)

    def _give_up(self, why: str) -> None:
        if not self.broken:
            self.broken = True
            log.warning(
                "the worker template cannot fork workers (%s); starting each as a new interpreter", why
            )

    def stop(self) -> None:
        """Close the template's socket (it exits) and wait for it."""
        self._sock.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
            return
        self.proc.kill()
        self.proc.wait()


def start_template(python: str, environ: Mapping[str, str]) -> Template | None:
    """The worker template, started now; None where it cannot be used (the workers then start as new
    interpreters, which the log says once)."""
    try:
        return Template(python, environ)
    except OSError as exc:
        log.info("workers start as new interpreters: %s", exc)
        return None


class ForkedProcess:
    """A worker the template forked, as the pool uses a process (``pid``, ``poll``, ``wait``, ``send_signal``)."""

    def __init__(self, template: Template) -> None:
        self._template = template
        self._pid: int | None = None
        self.returncode: int | None = None
        self._wait_lock = threading.Lock()

    def resolved(self, pid: int) -> None:
        self._pid = pid
        if pid <= 0:
            self.returncode = FAILED

    @property
    def pid(self) -> int:
        if self._pid is None:
            self._template.resolve(self)
        assert self._pid is not None
        return self._pid

    def _reaped(self, status: int) -> int:
        self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def poll(self) -> int | None:
        if self.returncode is not None or self.pid <= 0:
            return self.returncode
        if not self._wait_lock.acquire(blocking=False):
            return None  # another thread is waiting for it
        try:
            if self.returncode is not None:
                return self.returncode
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            return self._reaped(status) if pid else None
        except ChildProcessError:
            return self.returncode
        finally:
            self._wait_lock.release()

    def wait(self) -> int:
        pid = self.pid
        with self._wait_lock:
            if self.returncode is not None:
                return self.returncode
            _, status = os.waitpid(pid, 0)
            return self._reaped(status)

    def send_signal(self, sig: int) -> None:
        if self.returncode is None and self.pid > 0:
            os.kill(self.pid, sig)
