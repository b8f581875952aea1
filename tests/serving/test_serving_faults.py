"""Worker faults with real processes and a real server on 127.0.0.1: deaths while loading, deadlines of
queued requests, stopping. Synchronized on files the handlers write and on the server's own answers."""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path

import pytest
from serving_harness import Response, Server, start_server, wait_ready
from serving_models import write_model
from test_serving_lifecycle import alive
from waiting import wait_until

WAIT_S = 60.0  # an upper bound for a wait that fails the test, never a timing under test

DIES_ONCE = """
import ctypes
import os
import signal


def model_fn(model_dir):
    try:  # the first worker to get here dies; every later load succeeds
        os.close(os.open(os.environ["SMKIT_TEST_MARKER"], os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return None
    how = os.environ["SMKIT_TEST_DIE"]
    if how == "exit":
        os._exit(3)
    if how == "segfault":
        ctypes.string_at(0)  # a crash inside C code
    os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's out-of-memory killer


def transform_fn(model, data, content_type, accept):
    return str(os.getpid()), "text/plain"
"""


@pytest.mark.parametrize(
    ("how", "exit_text"),
    [("exit", "exit status 3"), ("segfault", "killed by SIGSEGV"), ("oom", "killed by SIGKILL")],
)
def test_worker_dying_while_loading_is_replaced_and_ping_turns_200(
    tmp_path: Path, how: str, exit_text: str
) -> None:
    model = write_model(tmp_path, "dies_once", DIES_ONCE)
    server = start_server(
        tmp_path,
        ["--model", str(model), "--workers", "2"],
        env={"SMKIT_TEST_MARKER": str(tmp_path / "died"), "SMKIT_TEST_DIE": how},
        ready=False,
    )
    try:
        wait_ready(server, timeout=WAIT_S)
        assert f"exited ({exit_text}) after a failed load; retrying in 1 s (retry 1 of 3)" in server.log()
        assert (tmp_path / "died").exists()
        assert len(server.children()) == 2
        assert server.invoke("x", "text/plain").status == 200
    finally:
        assert server.stop() == 0


def test_every_failed_load_is_retried_then_ping_reports_the_error(tmp_path: Path) -> None:
    # Each load records when it began (CLOCK_MONOTONIC is one clock for every process of the machine).
    attempts = tmp_path / "attempts.txt"
    model = write_model(
        tmp_path,
        "never_loads",
        "import os, time\n\n\ndef model_fn(model_dir):\n"
        "    with open(os.environ['SMKIT_TEST_ATTEMPTS'], 'a') as out:\n"
        "        out.write(f'{time.clock_gettime(time.CLOCK_MONOTONIC)}\\n')\n"
        "    raise MemoryError('weights do not fit')\n",
    )
    server = start_server(
        tmp_path,
        ["--model", str(model), "--workers", "1"],
        env={"SMKIT_WORKER_RETRIES": "1", "SMKIT_TEST_ATTEMPTS": str(attempts)},
        ready=False,
    )
    try:
        ping = wait_until(
            lambda: server.ping_when(lambda r: r.json()["message"].startswith("the model failed to load")),
            timeout=WAIT_S,
            what=server.log,
        )
        assert (
            ping.status == 503
            and ping.json()["message"] == "the model failed to load: MemoryError: weights do not fit"
        )
        log = server.log()
        assert "after a failed load; retrying in 1 s (retry 1 of 1)" in log
        assert "worker slot 0 is given up (0 of 1 workers ready)" in log
        # The retry's process starts during the back-off, but its load waits the whole back-off out.
        first, second = (float(line) for line in attempts.read_text().split())
        assert second - first >= 1.0
        assert server.invoke("1").status == 503  # still answering after the bad request
    finally:
        assert server.stop() == 0


HOLD = """
import os
import signal
import time


def model_fn(model_dir):
    return os.environ["SMKIT_TEST_GATE_DIR"]


def transform_fn(gate, data, content_type, accept, context):
    rid = context.get_request_header(0, "X-Id")
    open(os.path.join(gate, "ran-" + rid), "w").close()
    if context.get_request_header(0, "X-Hold"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})  # as a call stuck in C code
        open(os.path.join(gate, "in-" + rid), "w").close()
        while not os.path.exists(os.path.join(gate, "go-" + rid)):
            time.sleep(0.005)
    return str(os.getpid()), "text/plain"
"""


def call(server: Server, rid: str, hold: bool = False) -> Response:
    headers = {"Content-Type": "text/plain", "X-Id": rid, **({"X-Hold": "1"} if hold else {})}
    return server.request("POST", "/invocations", "x", headers, timeout=WAIT_S)


def test_request_queued_behind_a_long_one_gets_504_at_its_deadline_and_never_runs(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    gate.mkdir()
    model = write_model(tmp_path, "hold", HOLD)
    server = start_server(
        tmp_path,
        ["--model", str(model), "--workers", "1"],
        env={"SMKIT_TEST_GATE_DIR": str(gate), "SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS": "3"},
    )
    try:
        long: list[Response] = []
        runner = threading.Thread(target=lambda: long.append(call(server, "long", hold=True)))
        runner.start()
        wait_until(
            lambda: (gate / "in-long").exists(), timeout=WAIT_S, what="the long request in its handler"
        )
        queued = call(server, "queued")  # the only worker is busy with the long request
        assert queued.status == 504 and queued.json()["type"] == "InvocationTimeout"
        assert (
            "was not run" in queued.json()["message"]
            and "counted from its arrival" in queued.json()["message"]
        )
        assert not (gate / "go-long").exists()  # answered while the long request still held the worker
        (gate / "go-long").touch()
        runner.join(WAIT_S)
        assert long[0].status == 504
        # The worker stuck past its deadline is killed and replaced; a request sent after that runs, and
        # the queued one, ahead of it in the queue, was skipped by whichever worker took it.
        wait_until(lambda: call(server, "after").status == 200, timeout=WAIT_S, what=server.log)
        assert (gate / "ran-after").exists() and not (gate / "ran-queued").exists()
    finally:
        server.stop()
    lines = [json.loads(line) for line in server.log().splitlines() if line.startswith('{"ts"')]
    assert [line["pid"] for line in lines if line["status"] == 504][-1] == server.proc.pid  # the front end's


def test_workers_signalled_with_the_server_are_not_replaced(tmp_path: Path) -> None:
    model = write_model(tmp_path, "plain", "def model_fn(model_dir):\n    return None\n")
    server = start_server(tmp_path, ["--model", str(model), "--workers", "2"], own_group=True)
    workers = wait_until(lambda: len(c := server.children()) == 2 and c, timeout=WAIT_S, what="two workers")
    # A process group stopped at once (a local endpoint, a terminal): the front end and its workers. One
    # killpg, as a terminal's Ctrl-C: signalling them one by one lost the race when the server's own stop
    # ended a worker first (ProcessLookupError, 1 run of ~10 at load 2).
    os.killpg(server.proc.pid, signal.SIGTERM)
    assert server.proc.wait(WAIT_S) == 0
    log = server.log()
    assert log.count("while the server stops; not replaced") == 2
    assert "starting a replacement" not in log
    assert not any(map(alive, workers))
