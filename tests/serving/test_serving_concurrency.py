"""Several requests at once in one worker (SMKIT_WORKER_CONCURRENCY): real servers, handlers that wait.

Overlap is shown by events, never by timings: a handler waits until a given number of requests are
inside the same worker at once (or until the test releases it), so requests that cannot overlap never
get there.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from serving_harness import Response, Server, start_server
from serving_models import write_model
from waiting import wait_until

from smkit.hosting.env import ServingEnv, ServingEnvError

METRICS = ("smkit_requests_in_flight", "smkit_queue_depth", "smkit_workers_busy")

# Threads: each request counts itself in, then waits until WANT requests are inside this process at once
# or the release file exists; it answers how many were inside at most, and its process id.
THREADED = """
import json, os, threading, time

STATE = {"inside": 0, "most": 0, "went": 0}
CHANGED = threading.Condition()
RELEASE = os.environ["SMKIT_TEST_RELEASE"]
INSIDE = os.environ["SMKIT_TEST_INSIDE"]


def model_fn(model_dir):
    return None


def transform_fn(model, data, content_type, accept):
    want = int(data)
    with CHANGED:
        STATE["inside"] += 1
        STATE["most"] = max(STATE["most"], STATE["inside"])
        CHANGED.notify_all()
        with open(INSIDE, "a") as out:
            out.write("in\\n")
        if STATE["inside"] >= want:
            STATE["went"] = want  # all in: every one of them goes
            CHANGED.notify_all()
        while STATE["went"] < want and not os.path.exists(RELEASE):
            CHANGED.wait(0.01)  # the release file is polled; the count wakes it at once
        most = STATE["most"]
        STATE["inside"] -= 1
    return json.dumps({"most": most, "pid": os.getpid()}), "application/json"
"""

# asyncio: an ``async def`` predict_fn waits on one asyncio.Event that the WANT-th request sets.
ASYNC = """
import asyncio, json, os

STATE = {"inside": 0, "most": 0, "all_in": None}


def model_fn(model_dir):
    return None


def input_fn(data, content_type):
    return int(data)


async def predict_fn(want, model):
    if STATE["all_in"] is None:
        STATE["all_in"] = asyncio.Event()  # made on the worker's loop, where every hook runs
    STATE["inside"] += 1
    STATE["most"] = max(STATE["most"], STATE["inside"])
    if 0 < want <= STATE["inside"]:
        STATE["all_in"].set()
    try:
        if want > 0:
            await STATE["all_in"].wait()
        else:
            await asyncio.sleep(3600)  # never ends: only the request's deadline does (it is cancelled)
    finally:
        STATE["inside"] -= 1
    return {"most": STATE["most"], "pid": os.getpid()}


def output_fn(prediction, accept):
    return json.dumps(prediction), "application/json"
"""

# A thread stuck in Python code past its deadline: interrupted there, the worker serves on.
SPINS = """
import json, os


def model_fn(model_dir):
    return None


def transform_fn(model, data, content_type, accept):
    if data in ("spin", b"spin"):
        while True:
            pass
    return json.dumps({"pid": os.getpid()}), "application/json"
"""


def _serve(tmp_path: Path, handler: str, concurrency: int, **env: str) -> Server:
    model = write_model(tmp_path, "model", handler)
    return start_server(
        tmp_path,
        ["--model", str(model), "--workers", "1"],
        env={
            "SMKIT_WORKER_CONCURRENCY": str(concurrency),
            "SMKIT_TEST_RELEASE": str(tmp_path / "release"),
            "SMKIT_TEST_INSIDE": str(tmp_path / "inside"),
            "SMKIT_ACCESS_LOG": "false",
            **env,
        },
    )


def _together(server: Server, bodies: list[str]) -> list[Response]:
    with ThreadPoolExecutor(len(bodies)) as calls:
        return list(calls.map(lambda body: server.invoke(body, "text/plain"), bodies))


@pytest.mark.parametrize("handler", [THREADED, ASYNC], ids=["threads", "async-def"])
def test_requests_overlap_in_one_worker_with_the_setting_on(tmp_path: Path, handler: str) -> None:
    server = _serve(tmp_path, handler, concurrency=4)
    try:
        # Each request waits until all four are inside the one worker: they can only all finish together.
        answers = _together(server, ["4"] * 4)
        assert [a.status for a in answers] == [200] * 4, [a.body for a in answers]
        assert {a.json()["most"] for a in answers} == {4}
        assert len({a.json()["pid"] for a in answers}) == 1
    finally:
        assert server.stop() == 0


def test_the_same_handler_runs_one_at_a_time_with_the_setting_off(tmp_path: Path) -> None:
    server = _serve(tmp_path, THREADED, concurrency=1, SMKIT_QUEUE_SIZE="1")
    inside = tmp_path / "inside"
    try:
        with ThreadPoolExecutor(3) as calls:
            first = calls.submit(server.invoke, "2", "text/plain")
            wait_until(inside.exists, timeout=server.answer_bound(), what="the first request to start")
            # Two more while the first waits for a second request beside it: one is queued (the queue
            # holds one), the other refused. Overlapping requests would release each other.
            more = [calls.submit(server.invoke, "2", "text/plain") for _ in range(2)]
            refused = wait_until(
                lambda: next((f.result() for f in more if f.done()), None), timeout=server.answer_bound()
            )
            assert refused.status == 503 and "requests are waiting" in refused.json()["message"]
            (tmp_path / "release").touch()
            answers = [first.result(), *(f.result() for f in more if f.result() is not refused)]
        assert [a.status for a in answers] == [200, 200]
        assert [a.json()["most"] for a in answers] == [1, 1]
        assert inside.read_text().count("in") == 2
    finally:
        assert server.stop() == 0


def test_metrics_count_the_requests_running_side_by_side(tmp_path: Path) -> None:
    server = _serve(tmp_path, THREADED, concurrency=4)
    try:
        with ThreadPoolExecutor(3) as calls:
            held = [calls.submit(server.invoke, "99", "text/plain") for _ in range(3)]  # wait for release

            def three_in() -> dict[str, float] | None:
                if inside_count(tmp_path) < 3:  # each is in the worker's scoreboard before its handler runs
                    return None
                text = server.request("GET", "/metrics").body.decode()
                found = dict(re.findall(r"^(smkit_[a-z_]+) ([0-9.e+]+)$", text, re.M))
                return {name: float(found.get(name, "nan")) for name in METRICS}

            gauges = wait_until(three_in, timeout=server.answer_bound(), what="3 requests inside the worker")
            (tmp_path / "release").touch()
            assert [f.result().status for f in held] == [200] * 3
        assert gauges == {"smkit_requests_in_flight": 3, "smkit_queue_depth": 0, "smkit_workers_busy": 1}
    finally:
        assert server.stop() == 0


def inside_count(tmp_path: Path) -> int:
    inside = tmp_path / "inside"
    return inside.read_text().count("in") if inside.exists() else 0


def test_a_thread_past_its_deadline_is_interrupted_and_the_worker_serves_on(tmp_path: Path) -> None:
    server = _serve(tmp_path, SPINS, concurrency=2, SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS="1")
    try:
        before = server.invoke("hello", "text/plain")
        stuck = server.invoke("spin", "text/plain")
        assert stuck.status == 504 and stuck.json()["type"] == "InvocationTimeout"
        assert "SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS" in stuck.json()["message"]
        # The worker interrupted its own thread: the same process answers both of the next two at once.
        after = _together(server, ["a", "b"])
        assert [a.status for a in after] == [200, 200]
        assert {a.json()["pid"] for a in after} == {before.json()["pid"]}
        assert "killing and replacing it" not in server.log()
    finally:
        assert server.stop() == 0


@pytest.mark.parametrize("concurrency", [1, 2])
def test_an_async_hook_is_cancelled_at_its_deadline(tmp_path: Path, concurrency: int) -> None:
    server = _serve(tmp_path, ASYNC, concurrency=concurrency, SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS="1")
    try:
        stuck = server.invoke("0", "text/plain")  # awaits forever
        assert stuck.status == 504 and stuck.json()["type"] == "InvocationTimeout"
        # The loop is free again (with 2, two requests overlap on it).
        after = _together(server, [str(concurrency)] * concurrency)
        assert [a.status for a in after] == [200] * concurrency
        assert {a.json()["most"] for a in after} == {concurrency}
        assert "killing and replacing it" not in server.log()
    finally:
        assert server.stop() == 0


def test_streams_side_by_side_arrive_whole(tmp_path: Path) -> None:
    # Two streamed answers from one worker at once: their frames share the worker's socket.
    handler = THREADED.replace(
        'return json.dumps({"most": most, "pid": os.getpid()}), "application/json"',
        'return (f"{most} {i}\\n" for i in range(2000)), "text/plain"',
    )
    server = _serve(tmp_path, handler, concurrency=2)
    try:
        answers = _together(server, ["2", "2"])
        assert [a.status for a in answers] == [200, 200]
        for answer in answers:
            assert answer.headers.get("transfer-encoding") == "chunked"
            assert answer.body.decode().splitlines() == [f"2 {i}" for i in range(2000)]
    finally:
        assert server.stop() == 0


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"SMKIT_WORKER_CONCURRENCY": "0"}, "SMKIT_WORKER_CONCURRENCY='0'"),
        ({"SMKIT_WORKER_CONCURRENCY": "two"}, "SMKIT_WORKER_CONCURRENCY='two' is not a number"),
        ({"SMKIT_WORKER_CONCURRENCY": "5000"}, "is more than 1024 requests per worker"),
        (
            {"SMKIT_WORKER_CONCURRENCY": "8", "SAGEMAKER_MULTI_MODEL": "true"},
            "SMKIT_WORKER_CONCURRENCY='8' cannot serve multi-model mode",
        ),
        (
            {"SMKIT_WORKER_CONCURRENCY": "8", "SAGEMAKER_TS_BATCH_SIZE": "4"},
            "SMKIT_WORKER_CONCURRENCY='8' cannot be combined with dynamic batching (SAGEMAKER_TS_BATCH_SIZE=4)",
        ),
    ],
)
def test_a_setting_it_cannot_honour_is_refused_with_the_fix(environ: dict[str, str], message: str) -> None:
    assert ServingEnv.from_environ({}).worker_concurrency == 1  # the default: one request per worker
    with pytest.raises(ServingEnvError, match=None) as caught:
        ServingEnv.from_environ(environ)
    assert message in str(caught.value), str(caught.value)
    assert json.dumps(str(caught.value))  # one line, printable
