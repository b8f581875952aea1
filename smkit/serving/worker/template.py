"""The worker template: ``python -m smkit.serving.worker.template``, a process that model workers fork from.

Starting a fresh interpreter per worker costs its start-up and the import of the runtime (a few hundred
milliseconds of CPU each, while the other workers and the front end start too). The template pays that once:
the front end starts it first, it imports the worker's runtime (:mod:`smkit.serving.worker.model_worker` and what
that imports: the standard library and smkit's handler-side modules) and nothing else, and then forks a
worker whenever the front end asks for one. Forking stays safe because of what the template never does: it
never imports the model's code or any library (NumPy, PyTorch, OpenMP runtimes), never starts a thread (it
checks before every fork) and never runs an event loop; ``model_fn`` runs only in the forked worker, which
creates its thread pools itself, as a fresh interpreter would.

Protocol, on a ``SOCK_SEQPACKET`` socket from the front end: a request is the worker's configuration
(JSON, smkit/serving/worker/model_worker.py) with its descriptors attached (``SCM_RIGHTS``, in the order of
:data:`FD_KEYS` present in the configuration); the answer is the worker's process id (decimal), or
``error: ...``. The worker is forked twice so that the template does not stay its parent: the first child
forks the worker and exits at once, and the worker becomes the front end's child (the front end is the
reaper of orphans among its descendants, ``PR_SET_CHILD_SUBREAPER``), which waits for it like any child.
The worker starts only once that has happened (the template closes a pipe the worker waits on).
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import signal
import socket
import sys
import threading
from typing import Any

from smkit.hosting.env import VAR_WORKER_CONFIG
from smkit.process import die_with_parent, name_process
from smkit.serving.wire.messages import FD_KEYS, TEMPLATE_NAME
from smkit.serving.worker import model_worker

MAX_REQUEST = 1 << 20
_FD = array.array("i").itemsize


def main() -> int:
    control = socket.socket(fileno=int(sys.argv[1]))
    name_process(TEMPLATE_NAME)  # its workers name themselves (smkit/serving/worker/model_worker.py)
    die_with_parent(signal.SIGKILL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the front end stops it, as it stops the workers
    while True:
        try:
            data, ancillary, _, _ = control.recvmsg(MAX_REQUEST, socket.CMSG_SPACE(len(FD_KEYS) * _FD))
        except ConnectionResetError:
            return 0
        if not data:
            return 0  # the front end is gone or stopping
        fds: list[int] = []
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.extend(array.array("i", payload[: len(payload) - len(payload) % _FD]))
        try:
            answer = str(_fork_worker(control, json.loads(data), fds)).encode()
        except Exception as exc:  # noqa: BLE001 - the front end starts that worker the usual way instead
            answer = f"error: {type(exc).__name__}: {exc}".encode()
        finally:
            for fd in fds:
                os.close(fd)
        control.send(answer)


def _fork_worker(control: socket.socket, config: dict[str, Any], fds: list[int]) -> int:
    """Fork a worker for ``config`` (its descriptors ``fds``); return its process id."""
    if threading.active_count() != 1:
        raise RuntimeError("the template runs a thread; forking it is not safe")
    keys = [key for key in FD_KEYS if key in config]
    if len(keys) != len(fds):
        raise ValueError(f"{len(fds)} descriptors for {len(keys)} configuration entries {keys}")
    config = {**config, **dict(zip(keys, fds, strict=True))}
    go_read, go_write = os.pipe()
    report_read, report_write = os.pipe()
    first = os.fork()
    if first == 0:  # the first child: fork the worker, say its id, exit
        try:
            os.close(go_write)
            os.close(report_read)
            worker = os.fork()
            if worker == 0:
                os.close(report_write)
                _become_worker(control, config, go_read)
            os.write(report_write, str(worker).encode())
        finally:
            os._exit(0)
    os.close(go_read)
    os.close(report_write)
    with os.fdopen(report_read, "rb") as report:
        pid = report.read()
    os.waitpid(first, 0)  # the worker is the front end's child from now on
    os.close(go_write)  # ... and may start
    if not pid:
        raise RuntimeError("the worker could not be forked")
    return int(pid)


def _become_worker(control: socket.socket, config: dict[str, Any], go: int) -> None:
    """In the forked worker: wait until adopted by the front end, then run as ``model_worker`` does."""
    code = 1
    try:
        control.close()
        with contextlib.suppress(OSError):
            os.read(go, 1)  # end of file once the first child has exited
        os.close(go)
        os.environ[VAR_WORKER_CONFIG] = json.dumps(config)
        code = model_worker.main()
        model_worker.flush()
    finally:
        os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
