"""The single-model HTTP contract over a real socket: good requests, then every bad one followed by a good one."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from serving_harness import Server
from waiting import wait_until

GOOD_CSV = "1,2\n3,4"
GOOD_RESULT = [[3.0, 6.0], [9.0, 12.0]]  # x * 1.5 (weights.txt) * 2.0 (helper.SCALE)


def assert_good(server: Server) -> None:
    """The server still answers a good request right."""
    response = server.invoke(GOOD_CSV)
    assert response.status == 200, response.body
    assert response.json() == GOOD_RESULT


def npy(array: np.ndarray, allow_pickle: bool = False) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=allow_pickle)
    return buffer.getvalue()


def test_ping_and_execution_parameters(chain_server: Server) -> None:
    ping = chain_server.request("GET", "/ping")
    assert ping.status == 200
    params = chain_server.request("GET", "/execution-parameters")
    assert params.status == 200
    assert params.json() == {
        "MaxConcurrentTransforms": 2,
        "BatchStrategy": "MULTI_RECORD",
        "MaxPayloadInMB": 6,
    }


@pytest.mark.parametrize(
    ("body", "content_type", "accept", "expected_type", "decode"),
    [
        (GOOD_CSV, "text/csv", None, "application/json", json.loads),
        (GOOD_CSV, "text/csv", "*/*", "application/json", json.loads),
        (
            "[[1, 2], [3, 4]]",
            "application/json",
            "text/csv",
            "text/csv",
            lambda b: np.loadtxt(io.StringIO(b.decode()), delimiter=",").tolist(),
        ),
        (
            GOOD_CSV,
            "text/csv; charset=utf-8",
            "application/x-npy",
            "application/x-npy",
            lambda b: np.load(io.BytesIO(b), allow_pickle=False).tolist(),
        ),
        (
            npy(np.array([[1.0, 2.0], [3.0, 4.0]])),
            "application/x-npy",
            "application/x-foo, text/csv;q=0.9",
            "text/csv",
            lambda b: np.loadtxt(io.StringIO(b.decode()), delimiter=",").tolist(),
        ),
    ],
    ids=["csv-no-accept", "csv-any", "json-to-csv", "csv-charset-to-npy", "npy-accept-list"],
)
def test_codecs_and_accept_resolution(
    chain_server: Server, body: bytes | str, content_type: str, accept: str | None, expected_type: str, decode
) -> None:
    response = chain_server.invoke(body, content_type, accept)
    assert response.status == 200, response.body
    assert response.headers["content-type"] == expected_type
    assert decode(response.body) == GOOD_RESULT


@pytest.mark.parametrize(
    ("accept", "expected_type"),
    [
        ("text/csv;q=0.5, application/json", "application/json"),
        ("application/json;q=0.1, text/csv;q=0.9", "text/csv"),
        ("application/json;q=0, */*", "text/csv"),
    ],
)
def test_accept_q_values_pick_the_preferred_type(
    chain_server: Server, accept: str, expected_type: str
) -> None:
    """RFC 9110 section 12.5.1: the highest q-value wins and q=0 means not acceptable."""
    response = chain_server.invoke(GOOD_CSV, "text/csv", accept)
    assert response.status == 200, response.body
    assert response.headers["content-type"] == expected_type


def test_accept_refusing_every_type_with_q0_is_406_then_good(chain_server: Server) -> None:
    response = chain_server.invoke(GOOD_CSV, "text/csv", "application/json;q=0")
    assert response.status == 406 and response.json()["type"] == "NotAcceptable"
    assert_good(chain_server)


def test_one_dimensional_csv_output_is_one_value_per_line(chain_server: Server) -> None:
    response = chain_server.invoke("1\n2\n3", "text/csv", "text/csv")
    assert response.status == 200
    assert response.body.decode().split() == ["3.0", "6.0", "9.0"]


def test_custom_attributes_round_trip_through_context(chain_server: Server) -> None:
    response = chain_server.invoke(GOOD_CSV, **{"X-Amzn-SageMaker-Custom-Attributes": "trace=7"})
    assert response.status == 200
    assert response.headers["x-amzn-sagemaker-custom-attributes"] == "echo=trace=7"


BAD_REQUESTS = [
    # (id, body, headers, status, type, message fragment)
    ("wrong-content-type", "1,2", {"Content-Type": "text/plain"}, 415, "UnsupportedMediaType", "text/plain"),
    ("missing-content-type", "1,2", {}, 415, "UnsupportedMediaType", "missing Content-Type"),
    ("malformed-json", "[[1, 2", {"Content-Type": "application/json"}, 400, "BadRequest", "not valid JSON"),
    ("ragged-csv", "1,2\n3", {"Content-Type": "text/csv"}, 400, "BadRequest", "not rectangular CSV"),
    (
        "pickle-npy",
        npy(np.array([{"evil": 1}], dtype=object), allow_pickle=True),
        {"Content-Type": "application/x-npy"},
        400,
        "BadRequest",
        "allow_pickle=False",
    ),
    ("bad-utf8-json", b"\xff\xfe[1]", {"Content-Type": "application/json"}, 400, "BadRequest", "UTF-8"),
    (
        "unknown-accept",
        GOOD_CSV,
        {"Content-Type": "text/csv", "Accept": "image/png"},
        406,
        "NotAcceptable",
        "image/png",
    ),
    (
        "handler-raises",
        "-1,0",
        {"Content-Type": "text/csv"},
        500,
        "InternalServerError",
        "boom in predict_fn",
    ),
    (
        "handler-raises-with-status",
        "-2,0",
        {"Content-Type": "text/csv"},
        418,
        "TeapotError",
        "short and stout",
    ),
    (
        "slow-handler-timeout",
        "-3,0",
        {"Content-Type": "text/csv"},
        504,
        "InvocationTimeout",
        "SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS",
    ),
]


@pytest.mark.parametrize(
    ("body", "headers", "status", "kind", "fragment"),
    [case[1:] for case in BAD_REQUESTS],
    ids=[case[0] for case in BAD_REQUESTS],
)
def test_bad_request_then_good(
    chain_server: Server, body: bytes | str, headers: dict[str, str], status: int, kind: str, fragment: str
) -> None:
    response = chain_server.request("POST", "/invocations", body, headers)
    assert response.status == status, response.body
    assert response.headers["content-type"] == "application/json"
    error = response.json()
    assert error["code"] == status
    assert error["type"] == kind
    assert fragment in error["message"]
    assert "traceback" not in error and "Traceback" not in response.body.decode()
    assert_good(chain_server)


def test_oversize_body_is_413_then_good(chain_server: Server) -> None:
    response = chain_server.invoke(b"1" * (6 * 1024 * 1024 + 1))
    assert response.status == 413
    assert response.json()["type"] == "PayloadTooLarge"
    assert "6291456-byte payload limit" in response.json()["message"]
    assert_good(chain_server)


def test_body_past_the_inline_limit_reaches_the_worker_whole(chain_server: Server) -> None:
    """A body over 64 KiB travels to the worker outside the queue's message (smkit/serving/wire/ipc.py)."""
    rows = 20_000  # 80 KB of CSV
    response = chain_server.invoke("\n".join(f"{i},1" for i in range(rows)))
    assert response.status == 200, response.body
    result = response.json()
    assert len(result) == rows and result[0] == [0.0, 3.0] and result[-1] == [(rows - 1) * 3.0, 3.0]
    assert_good(chain_server)


def test_unknown_path_and_wrong_method_then_good(chain_server: Server) -> None:
    missing = chain_server.request("GET", "/nope")
    assert missing.status == 404 and "/nope" in missing.json()["message"]
    wrong = chain_server.request("GET", "/invocations")
    assert wrong.status == 405 and "POST" in wrong.json()["message"]
    assert_good(chain_server)


def test_worker_killed_mid_request_is_replaced(chain_server: Server) -> None:
    before = set(chain_server.children())
    response = chain_server.invoke("-4,0")  # the handler SIGKILLs its own worker
    assert response.status == 500
    assert "killed by SIGKILL" in response.json()["message"] and "replaced" in response.json()["message"]
    assert chain_server.request("GET", "/ping").status == 200  # a replacement does not fail health checks
    for _ in range(6):
        assert_good(chain_server)  # the surviving worker serves while the replacement loads
    wait_until(
        lambda: len(after := set(chain_server.children())) == 2 and after != before,
        timeout=20,
        what="a replacement worker",
    )


def test_one_json_log_line_per_request(chain_server: Server) -> None:
    chain_server.invoke("7,7,7,7,7,7,7")  # a body size no other test sends

    def logged() -> list[dict[str, object]]:  # the line is written right after the response is sent
        lines = [json.loads(line) for line in chain_server.log().splitlines() if line.startswith('{"ts"')]
        return [r for r in lines if r["path"] == "/invocations" and r["request_bytes"] == 13]

    record = wait_until(logged, timeout=5, what="the request's log line")[-1]
    assert record["status"] == 200
    assert record["latency_ms"] > 0
    assert record["response_bytes"] > 0
    assert set(record) == {
        "ts",
        "method",
        "path",
        "status",
        "latency_ms",
        "request_bytes",
        "response_bytes",
        "pid",
    }
