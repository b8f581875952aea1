"""The front end and its worker pool over real sockets, synchronized on files the handlers and the test create.

Handlers announce themselves with a file (``in-ID``) and wait for the test's file (``go-ID``): the test
sees exactly which requests are inside a handler at any moment, without sleeps or timings.
"""

from __future__ import annotations

import http.client
import os
import socket
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from serving_harness import Response, Server, start_server
from serving_models import write_model
from waiting import wait_until

GATE = """
import os
import time


def model_fn(model_dir):
    return os.environ["SMKIT_TEST_GATE_DIR"]


def transform_fn(gate, data, content_type, accept, context):
    rid = context.get_request_header(0, "X-Gate")
    if rid:
        open(os.path.join(gate, "in-" + rid), "w").close()
        while not os.path.exists(os.path.join(gate, "go-" + rid)):
            time.sleep(0.002)
        os.rename(os.path.join(gate, "in-" + rid), os.path.join(gate, "done-" + rid))
    return str(os.getpid()), "text/plain"
"""

STALL = """
import os
import signal
import time


def model_fn(model_dir):
    return None


def transform_fn(model, data, content_type, accept):
    if data == b"sleep":
        time.sleep(600)
    if data == b"stuck":  # as code inside a C extension: no Python signal handler runs
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
        time.sleep(600)
    return str(os.getpid()), "text/plain"
"""

WAIT_S = 30.0  # an upper bound for a wait that fails the test, never a timing under test


def wait_for(condition, what: str) -> None:
    wait_until(condition, timeout=WAIT_S, interval=0.005, what=what)


def wait_for_answer(call, status: int) -> Response:
    """``call()`` again until it answers ``status`` (any other answer must be a deadline's 504)."""

    def attempt() -> Response | None:
        answer = call()
        assert answer.status in (status, 504), answer
        return answer if answer.status == status else None

    return wait_until(attempt, timeout=WAIT_S, interval=0.05, what=f"an answer {status}")


class Gate:
    """The test's side of the GATE handler."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def inside(self) -> set[str]:
        return {p.name[3:] for p in self.root.glob("in-*")}

    def release(self, rid: str) -> None:
        (self.root / f"go-{rid}").touch()


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Gate]]:
    root = tmp_path_factory.mktemp("gated")
    gate_dir = root / "gate"
    gate_dir.mkdir()
    model = write_model(root, "gate", GATE)
    server = start_server(
        root,
        ["--model", str(model)],
        env={
            "SMKIT_TEST_GATE_DIR": str(gate_dir),
            "SAGEMAKER_MODEL_SERVER_WORKERS": "2",
            "SMKIT_QUEUE_SIZE": "2",
            "SMKIT_BODY_TIMEOUT_SECONDS": "1",
        },
    )
    yield server, Gate(gate_dir)
    server.stop()


def gated_call(server: Server, rid: str, conn: http.client.HTTPConnection | None = None) -> Response:
    headers = {"Content-Type": "text/csv", "X-Gate": rid}
    if conn is None:
        return server.request("POST", "/invocations", "1", headers, timeout=WAIT_S)
    conn.request("POST", "/invocations", "1", headers)
    answer = conn.getresponse()
    return Response(answer.status, dict(answer.getheaders()), answer.read())


def test_ping_answers_while_every_worker_is_inside_a_handler(gated: tuple[Server, Gate]) -> None:
    server, gate = gated
    ids = [uuid.uuid4().hex for _ in range(2)]
    with ThreadPoolExecutor(2) as pool:
        calls = [pool.submit(gated_call, server, rid) for rid in ids]
        wait_for(lambda: gate.inside() == set(ids), "both workers inside their handlers")
        for _ in range(20):
            assert server.request("GET", "/ping", timeout=2).status == 200
        assert server.request("GET", "/execution-parameters", timeout=2).status == 200
        for rid in ids:
            gate.release(rid)
        assert {call.result().status for call in calls} == {200}


def test_keep_alive_connections_share_the_workers(gated: tuple[Server, Gate]) -> None:
    """Four keep-alive connections x 3 slow requests: always two inside their handlers at once."""
    server, gate = gated
    connections = [http.client.HTTPConnection("127.0.0.1", server.port, timeout=WAIT_S) for _ in range(4)]
    ids = [[uuid.uuid4().hex for _ in range(3)] for _ in connections]
    answers: list[Response] = []

    def client(conn: http.client.HTTPConnection, mine: list[str]) -> None:
        for rid in mine:
            answers.append(gated_call(server, rid, conn))

    threads = [threading.Thread(target=client, args=pair) for pair in zip(connections, ids, strict=True)]
    for thread in threads:
        thread.start()
    try:
        remaining = {rid for mine in ids for rid in mine}
        while remaining:
            # Whichever connection a request came on, both workers are busy while two connections have
            # requests left (each connection sends its next request after the previous answer).
            expected = min(2, sum(1 for mine in ids if remaining & set(mine)))
            wait_for(lambda n=expected: len(gate.inside() & remaining) == n, f"{expected} handlers inside")
            inside = gate.inside() & remaining
            assert len(inside) == expected
            first = sorted(inside)[0]
            gate.release(first)
            remaining.discard(first)
    finally:
        for mine in ids:
            for rid in mine:
                gate.release(rid)
        for thread in threads:
            thread.join(WAIT_S)
        for conn in connections:
            conn.close()
    assert len(answers) == 12 and {a.status for a in answers} == {200}
    assert len({a.body for a in answers}) == 2  # both worker processes answered


def test_one_caller_is_served_by_the_worker_that_finished_last(gated: tuple[Server, Gate]) -> None:
    """One request at a time: each goes to the idle worker that finished last (its caches are warm),
    never to the two workers in turns."""
    server, _ = gated
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=WAIT_S)
    try:
        pids = {gated_call(server, "", conn).body for _ in range(6)}
    finally:
        conn.close()
    pids |= {server.invoke("1").body for _ in range(6)}  # a new connection each
    assert len(pids) == 1


def test_a_request_goes_to_the_idle_worker_never_behind_a_busy_one(gated: tuple[Server, Gate]) -> None:
    server, gate = gated
    first, second, third = (uuid.uuid4().hex for _ in range(3))
    with ThreadPoolExecutor(3) as pool:
        calls = [pool.submit(gated_call, server, first)]
        wait_for(lambda: gate.inside() == {first}, "the first request inside its handler")
        calls.append(pool.submit(gated_call, server, second))
        wait_for(lambda: gate.inside() == {first, second}, "the second request inside the other worker")
        # Both busy: the third waits in the shared queue (or, arriving late, goes to the idle worker) and
        # is taken by the worker that finishes first, whichever it is.
        calls.append(pool.submit(gated_call, server, third))
        gate.release(second)
        wait_for(lambda: gate.inside() == {first, third}, "the third request in the worker that finished")
        gate.release(first)
        gate.release(third)
        answers = [call.result() for call in calls]
    assert {a.status for a in answers} == {200}
    assert answers[1].body == answers[2].body != answers[0].body


def test_full_queue_is_503_with_a_message(gated: tuple[Server, Gate]) -> None:
    server, gate = gated
    busy = [uuid.uuid4().hex for _ in range(2)]
    queued = [uuid.uuid4().hex for _ in range(3)]
    with ThreadPoolExecutor(5) as pool:
        running = [pool.submit(gated_call, server, rid) for rid in busy]
        wait_for(lambda: gate.inside() == set(busy), "both workers busy")
        waiting = [pool.submit(gated_call, server, rid) for rid in queued]  # queue size 2: one too many
        wait_for(lambda: any(call.done() for call in waiting), "the request the queue cannot take")
        refused = [call.result() for call in waiting if call.done()]
        assert len(refused) == 1 and refused[0].status == 503
        assert refused[0].json()["type"] == "ServiceUnavailable"
        assert "the queue is full" in refused[0].json()["message"]
        assert server.request("GET", "/ping").status == 200
        for rid in busy + queued:
            gate.release(rid)
        assert sorted(call.result().status for call in running + waiting) == [200] * 4 + [503]


def test_stalled_upload_is_cut_off_without_holding_a_worker(gated: tuple[Server, Gate]) -> None:
    server, gate = gated
    busy = [uuid.uuid4().hex for _ in range(2)]
    with ThreadPoolExecutor(2) as pool:
        running = [pool.submit(gated_call, server, rid) for rid in busy]
        wait_for(lambda: gate.inside() == set(busy), "both workers busy")
        # Every worker is inside a handler until the test releases it: the 408 comes from the front end.
        with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT_S) as sock:
            sock.sendall(b"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: text/csv\r\n")
            sock.sendall(b"Content-Length: 1000\r\n\r\n" + b"1" * 10)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 408 ")
        assert b"SMKIT_BODY_TIMEOUT_SECONDS" in answer
        assert gate.inside() == set(busy)
        for rid in busy:
            gate.release(rid)
        assert {call.result().status for call in running} == {200}
    assert server.invoke("1").status == 200


@pytest.fixture(scope="module")
def stalling(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("stalling")
    model = write_model(root, "stall", STALL)
    server = start_server(
        root,
        ["--model", str(model), "--workers", "1"],
        env={"SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS": "1"},
    )
    yield server
    server.stop()


def test_handler_in_time_sleep_gets_504_and_the_next_request_is_served(stalling: Server) -> None:
    response = stalling.invoke("sleep", "application/octet-stream")
    assert response.status == 504
    assert response.json()["type"] == "InvocationTimeout"
    assert "SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS" in response.json()["message"]
    assert stalling.invoke("fine", "application/octet-stream").status == 200


def test_handler_stuck_outside_python_gets_504_and_its_worker_is_replaced(stalling: Server) -> None:
    before = stalling.invoke("fine", "application/octet-stream").body
    response = stalling.invoke("stuck", "application/octet-stream")
    assert response.status == 504 and response.json()["type"] == "InvocationTimeout"
    # Requests sent while the replacement loads may reach their 1 s deadline first (504): the next 200
    # comes from the new worker.
    after = wait_for_answer(lambda: stalling.invoke("fine", "application/octet-stream"), 200)
    assert after.body != before
    assert stalling.request("GET", "/ping").status == 200
    assert "killing and replacing it" in stalling.log()


def test_dispatch_prefers_the_last_freed_worker_and_requeues_what_a_dead_one_never_took() -> None:
    """The front end's per-worker queues on real sockets: which idle worker a job goes to, and what
    happens to the jobs sent to a worker that exits."""
    from smkit.serving.front.pinning import Pinning
    from smkit.serving.front.relay import Job
    from smkit.serving.wire import ipc
    from smkit.serving.wire.messages import FEATURE_DISPATCH, FEATURE_PINNED
    from smkit.serving.wire.reply import Reply

    answers: list[Reply] = []

    class Recorder:
        def answer(self, token: object, reply: Reply, pid: int) -> None:
            answers.append(reply)

    def job(job_id: int, body: bytes = b"1") -> Job:
        message, fd = ipc.job_message(job_id, 0.0, 1e12, "POST", "/invocations", [], [body])
        return Job(job_id, message, fd, None, Recorder(), 0.0, 1e12)  # type: ignore[arg-type]

    pinning = Pinning()
    ends = [socket.socket(fileno=pinning.open(slot)) for slot in (0, 1)]
    try:
        pinning.ready(0, {FEATURE_DISPATCH: True})
        pinning.ready(1, {FEATURE_DISPATCH: True, FEATURE_PINNED: True})
        assert pinning.idle_slot() == 0  # a worker that loads later is the least recently used
        assert pinning.send(0, job(1), dispatched=True)
        assert pinning.idle_slot() == 1
        pinning.replied(1, 99)  # worker 1 answered a job of the shared queue: it finished last
        pinning.replied(0, 1)
        assert pinning.idle == [1, 0] and pinning.idle_slot() == 0
        pinning.replied(1, 100)
        assert pinning.idle_slot() == 1
        # Worker 1 exits holding a dispatched job it never took (its body in a file, still open) and a
        # session's: the first goes back to the shared queue, the second is answered 500.
        large = job(2, b"x" * (ipc.INLINE_BODY + 1))
        session = job(3)
        pinning.send(1, large, dispatched=True)
        pinning.send(1, session)
        requeued: list[Job] = []
        jobs = {2: large, 3: session}
        pinning.exited(1, jobs, 4242, requeued.append)
        assert requeued == [large] and large.fd >= 0 and 2 in jobs
        assert [a.status for a in answers] == [500] and 3 not in jobs
        assert pinning.idle == [0] and pinning.ready_slots() == []
        os.close(large.fd)
    finally:
        for end in [*ends, *pinning.sockets.values()]:
            end.close()


def test_a_job_that_timed_out_in_the_front_ends_backlog_frees_its_worker() -> None:
    """A worker's own queue full (its socket buffer), the next job waits in the front end; answered 504
    there, it is never sent, so no worker will answer it: the worker is idle once it has answered the rest."""
    from smkit.serving.front.pinning import Pinning
    from smkit.serving.front.relay import Job
    from smkit.serving.wire import ipc
    from smkit.serving.wire.messages import FEATURE_DISPATCH, FEATURE_PINNED

    class Ignore:
        def answer(self, token: object, reply: object, pid: int) -> None:
            return None

    pinning = Pinning()
    end = socket.socket(fileno=pinning.open(0))
    try:
        pinning.ready(0, {FEATURE_DISPATCH: True, FEATURE_PINNED: True})
        sent: list[Job] = []
        while not pinning.backlogs.get(0):  # session jobs of ~60 KB until the socket's buffer is full
            message, fd = ipc.job_message(
                len(sent) + 1, 0.0, 1e12, "POST", "/invocations", [], [b"x" * 60_000]
            )
            assert fd < 0
            sent.append(Job(len(sent) + 1, message, fd, None, Ignore(), 0.0, 1e12))  # type: ignore[arg-type]
            assert pinning.send(0, sent[-1])
            assert len(sent) < 1000
        waiting = pinning.backlogs[0][0]
        waiting.answered = True  # its deadline passed in the backlog (the pool's sweep answered 504)
        while pinning.held[0].keys() - {waiting.id}:
            end.recv(ipc.MAX_JOB_MESSAGE)  # the worker takes a job and answers it
            pinning.replied(0, min(pinning.held[0].keys() - {waiting.id}))
        assert pinning.held[0] == {} and not pinning.backlogs[0]
        assert pinning.idle_slot() == 0
    finally:
        end.close()
        for sock in pinning.sockets.values():
            sock.close()
