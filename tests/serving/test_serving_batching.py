"""Dynamic batching over real sockets: ``predict_batch_fn`` with ``SAGEMAKER_TS_BATCH_SIZE``.

Batches are made deterministic without timing: one worker, a long ``SAGEMAKER_TS_MAX_BATCH_DELAY`` and as
many concurrent requests as the batch size, so the batch runs when it is full (the event), never when a
wait runs out. Every handler reports the size of the batch it served, so a test sees what was batched.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from serving_harness import Response, Server, start_server
from serving_models import write_model
from waiting import wait_until
from websockets.sync.client import connect

from smkit.hooks import HookError, HookSignatureError, check_chain, describe, passes_context
from smkit.hosting.env import ServingEnv, ServingEnvError

WAIT_S = 60.0  # an upper bound for a wait that fails the test, never a timing under test
BATCH = 3
# Long enough that a batch never runs short on a busy machine: it runs when BATCH requests are in.
LONG_DELAY_MS = "30000"

BATCHED = """
import os

import numpy as np


def model_fn(model_dir):
    return "model"


def predict_batch_fn(inputs, model):
    with open(os.environ["SMKIT_TEST_BATCHES"], "a") as log:
        log.write(f"{len(inputs)}\\n")
    sums = [float(np.asarray(x, dtype=float).sum()) for x in inputs]
    if 999.0 in sums:  # a batch holding the request 999 gets a result one short
        return [np.array([s, len(inputs)]) for s in sums[:-1]]
    if -1.0 in sums:
        raise RuntimeError("predict failed on purpose")
    if 666.0 in sums:  # the worker dies holding the whole batch
        os.kill(os.getpid(), 9)
    return [np.array([s, len(inputs)]) for s in sums]


def output_fn(prediction, accept):
    if accept == "text/event-stream":
        return (str(x) for x in prediction)
    from smkit.serving.worker.codecs import encode

    return encode(prediction, accept)


async def bidirectional_fn(model, messages):
    async for message in messages:
        yield f"echo {message}"
"""

NO_HOOK = """
def model_fn(model_dir):
    return "model"


def predict_fn(data, model):
    return data
"""


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def _from_npy(body: bytes) -> np.ndarray:
    return np.load(io.BytesIO(body), allow_pickle=False)


def _at_once(calls: list[Callable[[], Response]]) -> list[Response]:
    with ThreadPoolExecutor(len(calls)) as pool:
        return [f.result(timeout=WAIT_S) for f in [pool.submit(c) for c in calls]]


@pytest.fixture(scope="module")
def batched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("batched")
    model = write_model(root, "batched", BATCHED)
    server = start_server(
        root,
        ["--model", str(model)],
        env={
            "SAGEMAKER_MODEL_SERVER_WORKERS": "1",
            "SAGEMAKER_TS_BATCH_SIZE": str(BATCH),
            "SAGEMAKER_TS_MAX_BATCH_DELAY": LONG_DELAY_MS,
            "SMKIT_TEST_BATCHES": str(root / "batches.log"),
        },
    )
    yield server
    server.stop()


def test_a_batch_of_mixed_content_types_answers_each_with_its_own_output_fn(batched: Server) -> None:
    answers = _at_once(
        [
            lambda: batched.invoke("[[1, 2], [3, 4]]", "application/json", "application/json"),
            lambda: batched.invoke("5,6\n", "text/csv", "text/csv"),
            lambda: batched.invoke(_npy(np.array([7.0, 8.0])), "application/x-npy", "application/x-npy"),
        ]
    )
    assert [a.status for a in answers] == [200, 200, 200], [a.body for a in answers]
    assert [a.headers["content-type"] for a in answers] == [
        "application/json",
        "text/csv",
        "application/x-npy",
    ]
    assert answers[0].json() == [10.0, 3.0]
    assert answers[1].body.decode().split() == ["11.0", "3.0"]
    assert _from_npy(answers[2].body).tolist() == [15.0, 3.0]


def test_a_malformed_request_fails_alone_and_its_batch_mates_succeed(batched: Server) -> None:
    answers = _at_once(
        [
            lambda: batched.invoke("[1, 2]", "application/json"),
            lambda: batched.invoke("{not json", "application/json"),
            lambda: batched.invoke("[3]", "application/json"),
        ]
    )
    assert [a.status for a in answers] == [200, 400, 200], [a.body for a in answers]
    assert "body is not valid JSON" in answers[1].json()["message"]
    # The malformed request never reached predict_batch_fn: its two batch-mates were a batch of two.
    assert answers[0].json() == [3.0, 2.0]
    assert answers[2].json() == [3.0, 2.0]


def test_a_result_of_the_wrong_length_fails_the_whole_batch_with_500(batched: Server) -> None:
    answers = _at_once(
        [lambda body=body: batched.invoke(body, "application/json") for body in ("1", "999", "2")]
    )
    assert [a.status for a in answers] == [500, 500, 500]
    for answer in answers:
        assert answer.json()["message"] == (
            "predict_batch_fn returned 2 predictions for a batch of 3 inputs; it must return a list with "
            "one prediction per input, in the inputs' order"
        )


def test_a_predict_error_fails_every_request_of_its_batch(batched: Server) -> None:
    answers = _at_once(
        [lambda body=body: batched.invoke(body, "application/json") for body in ("1", "-1", "2")]
    )
    assert [a.status for a in answers] == [500, 500, 500]
    assert all("predict failed on purpose" in a.json()["message"] for a in answers)


def test_a_worker_dying_in_a_batch_answers_every_request_of_it(batched: Server) -> None:
    answers = _at_once(
        [lambda body=body: batched.invoke(body, "application/json") for body in ("1", "666", "2")]
    )
    assert [a.status for a in answers] == [500, 500, 500]
    for answer in answers:
        assert (
            "the worker process exited (killed by SIGKILL) while handling this request"
            in answer.json()["message"]
        )

    def replaced() -> Response | None:  # the replacement worker batches again
        return batched.ping_when(lambda a: a.status == 200)

    wait_until(replaced, timeout=WAIT_S, what=lambda: f"the worker to be replaced:\n{batched.log()}")
    answers = _at_once([lambda n=n: batched.invoke(str(n), "application/json") for n in range(BATCH)])
    assert [a.status for a in answers] == [200] * BATCH


def test_a_streamed_answer_is_never_part_of_a_batch(batched: Server) -> None:
    answers = _at_once(
        [
            lambda: batched.invoke("1", "application/json", "text/event-stream"),
            lambda: batched.invoke("2", "application/json"),
            lambda: batched.invoke("3", "application/json"),
        ]
    )
    assert [a.status for a in answers] == [500, 200, 200]
    assert answers[0].json()["message"].startswith("output_fn returned a stream for a batched request")
    assert "SAGEMAKER_TS_BATCH_SIZE" in answers[0].json()["message"]


def test_a_bidirectional_session_is_served_alone_while_batching_is_on(batched: Server) -> None:
    url = f"ws://127.0.0.1:{batched.port}/invocations-bidirectional-stream"
    with connect(url, open_timeout=WAIT_S) as session:
        session.send("hello")
        assert session.recv(timeout=WAIT_S) == "echo hello"
    # The one worker is free again and batches as before.
    answers = _at_once([lambda n=n: batched.invoke(str(n), "application/json") for n in range(BATCH)])
    assert [a.json()[1] for a in answers] == [float(BATCH)] * BATCH


def test_a_request_whose_deadline_passes_while_waiting_for_batch_mates_gets_504(tmp_path: Path) -> None:
    model = write_model(tmp_path, "waits", BATCHED)
    batches = tmp_path / "batches.log"
    server = start_server(
        tmp_path,
        ["--model", str(model)],
        env={
            "SAGEMAKER_MODEL_SERVER_WORKERS": "1",
            "SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS": "1",
            "SAGEMAKER_TS_BATCH_SIZE": "2",
            "SAGEMAKER_TS_MAX_BATCH_DELAY": "1000",  # as long as the timeout: a lone request never runs
            "SMKIT_TEST_BATCHES": str(batches),
        },
    )
    try:
        answer = server.invoke("[1]", "application/json")
        assert answer.status == 504
        assert (
            "(SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS, counted from its arrival) had passed"
            in (answer.json()["message"])
        )
        assert not batches.exists()  # predict_batch_fn never ran
    finally:
        server.stop()


def test_multi_model_batches_per_model(tmp_path: Path) -> None:
    root = tmp_path / "models"
    for name in ("a", "b"):
        write_model(root, name, BATCHED)
    server = start_server(
        tmp_path,
        ["--multi-model", str(root)],
        env={
            "SAGEMAKER_MODEL_SERVER_WORKERS": "1",
            "SAGEMAKER_TS_BATCH_SIZE": "2",
            "SAGEMAKER_TS_MAX_BATCH_DELAY": LONG_DELAY_MS,
            "SMKIT_TEST_BATCHES": str(tmp_path / "batches.log"),
        },
    )
    try:
        for name in ("a", "b"):
            call = lambda n=name: server.request(  # noqa: E731
                "POST", f"/models/{n}/invoke", "[2]", {"Content-Type": "application/json"}, timeout=WAIT_S
            )
            answers = _at_once([call, call])
            assert [a.status for a in answers] == [200, 200], [a.body for a in answers]
            assert [a.json() for a in answers] == [[2.0, 2.0], [2.0, 2.0]]
    finally:
        server.stop()


def test_multi_model_refuses_to_load_a_model_without_predict_batch_fn(tmp_path: Path) -> None:
    server = start_server(tmp_path, ["--multi-model", str(tmp_path)], env={"SAGEMAKER_TS_BATCH_SIZE": "2"})
    try:
        model = write_model(tmp_path / "models", "nohook", NO_HOOK)
        answer = server.request(
            "POST", "/models", json.dumps({"model_name": "nohook", "url": str(model)}),
            {"Content-Type": "application/json"},
        )  # fmt: skip
        assert answer.status == 500
        assert (
            "predict_batch_fn: is not defined, but batching is on (SAGEMAKER_TS_BATCH_SIZE=2)"
            in (answer.json()["message"])
        )
    finally:
        server.stop()


# -- refused at load ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"SAGEMAKER_TS_BATCH_SIZE": "0"}, "SAGEMAKER_TS_BATCH_SIZE='0' is below 1"),
        ({"SAGEMAKER_TS_BATCH_SIZE": "-4"}, "SAGEMAKER_TS_BATCH_SIZE='-4' is below 1"),
        ({"SAGEMAKER_TS_BATCH_SIZE": "many"}, "SAGEMAKER_TS_BATCH_SIZE='many' is not a whole number"),
        (
            {"SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS": "2", "SAGEMAKER_TS_MAX_BATCH_DELAY": "2500"},
            "SAGEMAKER_TS_MAX_BATCH_DELAY='2500' ms is over the invocation timeout of 2 s "
            "(SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS)",
        ),
        ({"SAGEMAKER_TS_MAX_BATCH_DELAY": "-1"}, "SAGEMAKER_TS_MAX_BATCH_DELAY='-1' is below 0"),
    ],
)
def test_bad_batching_settings_are_refused_naming_the_setting(environ: dict[str, str], message: str) -> None:
    with pytest.raises(ServingEnvError) as caught:
        ServingEnv.from_environ(environ)
    assert message in str(caught.value)


def test_the_server_refuses_to_start_with_a_bad_batch_size(tmp_path: Path) -> None:
    model = write_model(tmp_path, "m", BATCHED)
    server = start_server(
        tmp_path, ["--model", str(model)], env={"SAGEMAKER_TS_BATCH_SIZE": "0"}, ready=False
    )
    assert server.proc.wait(WAIT_S) != 0
    assert "SAGEMAKER_TS_BATCH_SIZE='0' is below 1" in server.log()


def test_batching_on_a_model_without_predict_batch_fn_is_refused_at_load(tmp_path: Path) -> None:
    model = write_model(tmp_path, "nohook", NO_HOOK)
    server = start_server(
        tmp_path,
        ["--model", str(model)],
        env={"SAGEMAKER_TS_BATCH_SIZE": "4", "SMKIT_WORKER_RETRIES": "0"},
        ready=False,
    )
    try:
        expected = (
            "predict_batch_fn: is not defined, but batching is on (SAGEMAKER_TS_BATCH_SIZE=4); define "
            "predict_batch_fn(inputs, model)"
        )

        def refused() -> Response | None:
            return server.ping_when(lambda a: a.status == 503 and "failed to load" in a.body.decode())

        answer = wait_until(
            refused, timeout=WAIT_S, what=lambda: f"/ping to report the failed load:\n{server.log()}"
        )
        assert expected in json.loads(answer.body)["message"]
    finally:
        server.stop()


def test_a_predict_batch_fn_that_cannot_be_called_so_is_refused() -> None:
    def one_parameter(inputs):  # type: ignore[no-untyped-def]
        return inputs

    with pytest.raises(HookSignatureError) as caught:
        passes_context("predict_batch_fn", describe(one_parameter))
    assert str(caught.value) == (
        "predict_batch_fn: takes 1 positional parameter, but it is called as "
        "predict_batch_fn(inputs, model[, context]); define it as `def predict_batch_fn(inputs, model):` "
        "(a trailing context parameter is optional)"
    )


def test_transform_fn_with_predict_batch_fn_is_refused() -> None:
    with pytest.raises(HookError, match="transform_fn: is defined together with predict_batch_fn"):
        check_chain(["transform_fn", "predict_batch_fn"])


def test_without_batching_predict_batch_fn_alone_serves_a_batch_of_one(tmp_path: Path) -> None:
    model = write_model(tmp_path, "alone", BATCHED)
    server = start_server(
        tmp_path, ["--model", str(model)], env={"SMKIT_TEST_BATCHES": str(tmp_path / "batches.log")}
    )
    try:
        answer = server.invoke("[4, 5]", "application/json")
        assert answer.status == 200
        assert answer.json() == [9.0, 1.0]
        streamed = server.invoke("[4, 5]", "application/json", "text/event-stream")
        assert streamed.status == 200 and streamed.body == b"9.01.0"  # streams as before, outside batching
    finally:
        server.stop()


def test_batching_with_stateful_sessions_is_refused_at_load(tmp_path: Path) -> None:
    """A batch would mix requests that a session pins to one worker: the load fails naming both settings."""
    model = write_model(tmp_path, "batched", BATCHED)
    server = start_server(
        tmp_path,
        ["--model", str(model)],
        env={
            "SAGEMAKER_TS_BATCH_SIZE": "4",
            "SAGEMAKER_ENABLE_STATEFUL_SESSIONS": "true",
            "SMKIT_WORKER_RETRIES": "0",
        },
        ready=False,
    )
    try:

        def refused() -> Response | None:
            return server.ping_when(lambda a: a.status == 503 and "failed to load" in a.body.decode())

        answer = wait_until(
            refused, timeout=WAIT_S, what=lambda: f"/ping to report the failed load:\n{server.log()}"
        )
        message = json.loads(answer.body)["message"]
        assert "SAGEMAKER_TS_BATCH_SIZE=4 (dynamic batching) cannot serve" in message
        assert "SAGEMAKER_ENABLE_STATEFUL_SESSIONS" in message
    finally:
        server.stop()
