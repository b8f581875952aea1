"""``GET /metrics`` (docs/observability.md) over real sockets: counters and histograms that match the traffic
sent, parsed with prometheus_client's own parser.

No timing is asserted: a slow request is told apart by the bucket bounds it must fall between (it sleeps
0.3 s, so it is above 0.25 s whatever the machine's load), and waits are on events (a file the handler
waits for, the metrics themselves), never sleeps.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from serving_harness import Response, Server, start_server
from serving_models import write_model
from waiting import wait_until

from smkit.hosting.env import ServingEnv, ServingEnvError

WAIT_S = 60.0  # an upper bound for a wait that fails the test, never a timing under test

MIXED = """
import json
import os
import time


class BadInput(Exception):
    status_code = 400


def model_fn(model_dir):
    return "model"


def input_fn(body, content_type):
    if content_type != "application/json":
        raise BadInput(f"send application/json, not {content_type}")
    return json.loads(body)


def predict_fn(data, model):
    if data.get("fail"):
        raise RuntimeError("failed on purpose")
    if data.get("sleep"):
        time.sleep(data["sleep"])
    if data.get("hold"):  # wait until the test lets it go: a busy worker, on an event
        while not os.path.exists(data["hold"]):
            time.sleep(0.005)
    if data.get("stream"):
        return ({"chunk": i} for i in range(3))
    return data
"""

BATCHED = """
import json


def model_fn(model_dir):
    return model_dir


def input_fn(body, content_type):
    return json.loads(body)


def predict_batch_fn(inputs, model):
    return [{"n": len(inputs)} for _ in inputs]
"""


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(server: Server) -> tuple[Response, Samples]:
    response = server.request("GET", "/metrics")
    samples: Samples = {}
    for family in text_string_to_metric_families(response.body.decode()):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return response, samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def _at_once(calls: list[Callable[[], Response]]) -> list[Response]:
    with ThreadPoolExecutor(len(calls)) as pool:
        return [f.result(timeout=WAIT_S) for f in [pool.submit(c) for c in calls]]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``smkit serve`` (the CLI) with the mixed model, 2 workers."""
    root = tmp_path_factory.mktemp("metrics")
    model = write_model(root, "mixed", MIXED)
    server = start_server(root, ["serve", "--model", str(model)], module="smkit.cli")
    yield server
    server.stop()


def _json(server: Server, payload: object, content_type: str = "application/json") -> Response:
    return server.invoke(json.dumps(payload), content_type)


def test_metrics_match_mixed_traffic(served: Server) -> None:
    first, before = scrape(served)
    assert first.status == 200
    assert first.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert value(before, "smkit_worker_starts_total") == 2
    assert value(before, "smkit_workers", state="ready") == 2
    assert value(before, "smkit_model_load_seconds_count") == 2

    statuses = [
        _json(served, {"x": 1}).status,
        _json(served, {"x": 2}).status,
        _json(served, {"x": 3}).status,
        _json(served, {"fail": True}).status,
        _json(served, {"x": 1}, "text/csv").status,
        _json(served, {"sleep": 0.3}).status,
    ]
    assert statuses == [200, 200, 200, 500, 400, 200]
    streamed = _json(served, {"stream": True})
    assert streamed.status == 200 and streamed.headers["transfer-encoding"] == "chunked"
    assert served.request("GET", "/no-such-path").status == 404
    assert served.request("GET", "/invocations").status == 405

    _, after = scrape(served)

    def added(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    inv = {"route": "/invocations", "model": ""}
    assert added("smkit_requests_total", status="200", **inv) == 5
    assert added("smkit_requests_total", status="500", **inv) == 1
    assert added("smkit_requests_total", status="400", **inv) == 1
    assert added("smkit_requests_total", status="405", **inv) == 1
    assert added("smkit_requests_total", route="other", status="404", model="") == 1
    assert added("smkit_requests_total", route="/metrics", status="200", model="") == 1  # the first scrape
    assert added("smkit_request_duration_seconds_count", **inv) == 8
    # Phases: every invocation ran input_fn (the 400 failed in it), all but that one predict_fn, and only
    # the whole answers output_fn (a stream's items are encoded one by one, outside output_fn).
    phase = {"model": ""}
    assert added("smkit_request_phase_seconds_count", phase="input_fn", **phase) == 7
    assert added("smkit_request_phase_seconds_count", phase="predict_fn", **phase) == 6
    assert added("smkit_request_phase_seconds_count", phase="output_fn", **phase) == 4
    # The 405 was answered by a worker too: 8 jobs waited in the queue (the 404 as well: 9).
    assert added("smkit_request_phase_seconds_count", phase="queue_wait", **phase) == 9
    # The slow request: in predict_fn, above 0.25 s.
    predict = {"phase": "predict_fn", **phase}
    assert added("smkit_request_phase_seconds_bucket", le="0.25", **predict) == 5
    assert added("smkit_request_phase_seconds_bucket", le="+Inf", **predict) == 6
    assert added("smkit_request_phase_seconds_sum", **predict) >= 0.3
    assert added("smkit_request_duration_seconds_bucket", le="0.25", **inv) == 7
    assert added("smkit_stream_first_chunk_seconds_count", model="") == 1
    assert added("smkit_stream_errors_total", model="") == 0
    assert value(after, "smkit_requests_in_flight") == 0
    assert value(after, "smkit_queue_depth") == 0
    assert value(after, "smkit_queue_capacity") == 100
    assert added("smkit_worker_starts_total") == 0


def test_metrics_answer_while_every_worker_is_busy(served: Server, tmp_path: Path) -> None:
    gate = tmp_path / "go"
    with ThreadPoolExecutor(4) as pool:
        held = [pool.submit(_json, served, {"hold": str(gate), "n": i}) for i in range(4)]

        def busy() -> Samples | None:
            _, samples = scrape(served)
            return samples if value(samples, "smkit_requests_in_flight") == 4 else None

        try:
            samples = wait_until(busy, timeout=WAIT_S, what="4 requests in flight")
            _, samples = scrape(served)  # both workers hold one each; two wait in the queue
            assert value(samples, "smkit_workers_busy") == 2
            assert value(samples, "smkit_queue_depth") == 2
        finally:
            gate.touch()
        assert [f.result(timeout=WAIT_S).status for f in held] == [200] * 4
    _, samples = scrape(served)
    assert value(samples, "smkit_requests_in_flight") == 0


def test_multi_model_batches_are_labelled_per_model_and_bounded(tmp_path: Path) -> None:
    root = tmp_path / "models"
    root.mkdir()
    names = ("alpha", "beta", "gamma")
    for name in names:
        write_model(root, name, BATCHED)
    server = start_server(
        tmp_path,
        ["--multi-model", str(root)],
        env={
            "SAGEMAKER_MODEL_SERVER_WORKERS": "1",
            "SAGEMAKER_TS_BATCH_SIZE": "3",
            "SAGEMAKER_TS_MAX_BATCH_DELAY": "30000",  # a batch runs when 3 requests are in: the event
            "SMKIT_METRICS_MAX_MODELS": "2",
        },
    )
    try:
        for name in names:
            loaded = server.request(
                "POST", "/models", json.dumps({"model_name": name, "url": str(root / name)}), {}
            )
            assert loaded.status == 200, loaded.body
        for name in names:
            answers = _at_once(
                [
                    lambda name=name: server.request(
                        "POST",
                        "/invocations",
                        "{}",
                        {"Content-Type": "application/json", "X-Amzn-SageMaker-Target-Model": name},
                    )
                    for _ in range(3)
                ]
            )
            assert [a.json() for a in answers] == [{"n": 3}] * 3
        _, samples = scrape(server)
        for model in ("alpha", "beta", "_other"):  # gamma came third: over the bound of 2 names
            assert (
                value(samples, "smkit_requests_total", route="/invocations", status="200", model=model) == 3
            )
            assert value(samples, "smkit_request_phase_seconds_count", phase="predict_fn", model=model) == 3
        assert value(samples, "smkit_requests_total", route="/invocations", status="200", model="gamma") == 0
        assert value(samples, "smkit_batch_size_count") == 3
        assert value(samples, "smkit_batch_size_sum") == 9
        assert value(samples, "smkit_batch_size_bucket", le="2.0") == 0
        assert value(samples, "smkit_batch_size_bucket", le="4.0") == 3
    finally:
        server.stop()


def test_metrics_can_be_turned_off(tmp_path: Path) -> None:
    model = write_model(tmp_path, "mixed", MIXED)
    server = start_server(tmp_path, ["--model", str(model)], env={"SMKIT_METRICS": "false"})
    try:
        assert _json(server, {"x": 1}).status == 200
        assert server.request("GET", "/metrics").status == 404
    finally:
        server.stop()


def test_a_metrics_path_of_its_own(tmp_path: Path) -> None:
    model = write_model(tmp_path, "mixed", MIXED)
    server = start_server(tmp_path, ["--model", str(model)], env={"SMKIT_METRICS_PATH": "/server/metrics"})
    try:
        response = server.request("GET", "/server/metrics")
        assert response.status == 200 and b"smkit_requests_total" in response.body
        assert server.request("GET", "/metrics").status == 404
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("variable", "raw", "message"),
    [
        (
            "SMKIT_METRICS_PATH",
            "metrics",
            "SMKIT_METRICS_PATH='metrics' must start with / and hold only letters, digits, /, _, - and . "
            "(at most 256 characters); use e.g. SMKIT_METRICS_PATH=/metrics",
        ),
        (
            "SMKIT_METRICS_PATH",
            "/ping",
            "SMKIT_METRICS_PATH='/ping' is one of the runtime's own routes; use e.g. SMKIT_METRICS_PATH=/metrics",
        ),
        ("SMKIT_METRICS", "maybe", "SMKIT_METRICS='maybe' is not a boolean; use true or false"),
    ],
)
def test_bad_metrics_settings_are_named(variable: str, raw: str, message: str) -> None:
    with pytest.raises(ServingEnvError) as caught:
        ServingEnv.from_environ({variable: raw})
    assert str(caught.value) == message


CRASHING = """
import json
import os


def model_fn(model_dir):
    return "model"


def input_fn(body, content_type):
    return json.loads(body)


def predict_fn(data, model):
    if data.get("die"):
        os._exit(3)  # the worker dies holding the request
    return data
"""

FAILING = """
def model_fn(model_dir):
    raise RuntimeError("weights missing on purpose")
"""


def test_a_worker_that_dies_serving_is_counted_and_replaced(tmp_path: Path) -> None:
    model = write_model(tmp_path, "crashing", CRASHING)
    server = start_server(tmp_path, ["--model", str(model)], env={"SAGEMAKER_MODEL_SERVER_WORKERS": "1"})
    try:
        assert _json(server, {"die": True}).status == 500

        def replaced() -> Samples | None:
            _, samples = scrape(server)
            return (
                samples
                if value(samples, "smkit_workers", state="ready") == 1
                and value(samples, "smkit_worker_starts_total") == 2
                else None
            )

        samples = wait_until(replaced, timeout=WAIT_S, what="the replacement worker to load")
        assert value(samples, "smkit_worker_exits_total", during="serving") == 1
        assert value(samples, "smkit_worker_restarts_total") == 1
        assert value(samples, "smkit_model_load_seconds_count") == 2
        assert value(samples, "smkit_requests_total", route="/invocations", status="500", model="") == 1
        assert _json(server, {"x": 1}).status == 200
    finally:
        server.stop()


def test_a_model_that_fails_to_load_is_counted_while_ping_says_503(tmp_path: Path) -> None:
    """The failed /ping at CREATE: /metrics answers while /ping is 503 and counts the failed loads."""
    model = write_model(tmp_path, "failing", FAILING)
    server = start_server(
        tmp_path,
        ["--model", str(model)],
        env={"SAGEMAKER_MODEL_SERVER_WORKERS": "1", "SMKIT_WORKER_RETRIES": "1"},
        ready=False,
    )
    try:

        def given_up() -> Samples | None:
            answer = server.try_request("GET", "/metrics")
            if answer is None:
                return None
            _, samples = scrape(server)
            return samples if value(samples, "smkit_workers", state="gave_up") == 1 else None

        samples = wait_until(given_up, timeout=WAIT_S, what="the slot to be given up")
        assert value(samples, "smkit_model_load_failures_total") == 2  # the load and its one retry
        assert value(samples, "smkit_worker_exits_total", during="loading") >= 1
        assert value(samples, "smkit_model_load_seconds_count") == 0
        ping = server.request("GET", "/ping")
        assert ping.status == 503 and "weights missing on purpose" in ping.json()["message"]
    finally:
        server.stop()
