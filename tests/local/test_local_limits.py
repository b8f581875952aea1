"""Request heads bounded like AWS's front doors: a request line over 16 KiB, one header over 16 KiB, headers
over 64 KiB in all or more than 100 fields are answered 400 in the service's error shape, the connection
closed, and the gateway keeps serving."""

from __future__ import annotations

import contextlib
import json
import socket
import time

import pytest
from chat_handler import REALTIME, project

from smkit.local import LocalEndpoint
from smkit.local.head_refusal import MAX_HEADER_FIELD, MAX_REQUEST_HEADERS, MAX_REQUEST_LINE

BODY = json.dumps({"messages": [{"role": "user", "content": "hi"}]})


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    root = tmp_path_factory.mktemp("limits")
    config = project(root, "bounded", REALTIME)
    with LocalEndpoint(config, root=root, log_dir=root / "logs", model_envs=False) as ep:
        yield ep


def _invoke(endpoint, client=None):
    client = client or endpoint.client()
    return client.invoke_endpoint(EndpointName=endpoint.name, ContentType="application/json", Body=BODY)


def _still_serving(endpoint):
    assert _invoke(endpoint)["ResponseMetadata"]["HTTPStatusCode"] == 200


def _exchange(endpoint, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    with socket.create_connection(("127.0.0.1", endpoint.port), timeout=10) as sock:
        # Refused before it was all sent: the answer is still there to read.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(raw)
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body


def _head(target: str = "/ping", extra: bytes = b"") -> bytes:
    return f"GET {target} HTTP/1.1\r\nHost: x\r\n".encode() + extra + b"\r\n"


def test_a_64_kib_header_from_boto3_is_refused_in_the_services_shape(endpoint, client_error):
    client = endpoint.client()

    def big_header(request, **kwargs):
        request.headers["X-Big"] = "b" * (64 * 1024)

    client.meta.events.register("before-send.sagemaker-runtime.InvokeEndpoint", big_header)
    error = client_error(lambda: _invoke(endpoint, client), "400", "Request header X-Big is 65545 bytes")
    assert error.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert f"over the {MAX_HEADER_FIELD}-byte limit of one header" in error.response["Error"]["Message"]
    _still_serving(endpoint)


def test_a_64_kib_header_on_the_wire(endpoint):
    status, headers, body = _exchange(endpoint, _head(extra=b"X-Big: " + b"b" * 65536 + b"\r\n"))
    assert status == 400
    assert headers["content-type"] == "application/json" and headers["connection"] == "close"
    assert "x-amzn-requestid" in headers
    assert json.loads(body) == {
        "message": f"Request header X-Big is 65545 bytes, over the {MAX_HEADER_FIELD}-byte limit of one header; "
        "send large data in the body, not in headers or the URL."
    }
    _still_serving(endpoint)


def test_a_request_line_over_16_kib_is_refused(endpoint):
    status, _, body = _exchange(endpoint, _head("/" + "a" * MAX_REQUEST_LINE))
    assert status == 400
    assert json.loads(body)["message"].startswith(f"Request line over {MAX_REQUEST_LINE} bytes")
    _still_serving(endpoint)


def test_headers_over_64_kib_in_all_are_refused(endpoint):
    fields = b"".join(b"X-F%d: %s\r\n" % (i, b"v" * 1024) for i in range(70))
    status, _, body = _exchange(endpoint, _head(extra=fields))
    assert status == 400
    assert json.loads(body)["message"].startswith(f"Request headers over {MAX_REQUEST_HEADERS} bytes in all")
    _still_serving(endpoint)


def test_more_than_100_header_fields_are_refused(endpoint):
    fields = b"".join(b"X-F%d: 1\r\n" % i for i in range(101))
    status, _, body = _exchange(endpoint, _head(extra=fields))
    assert status == 400
    assert json.loads(body)["message"] == "More than 100 request header fields (at x-f99); send fewer."
    _still_serving(endpoint)


def test_headers_within_the_limits_are_served(endpoint):
    fields = (
        b"".join(b"X-F%d: %s\r\n" % (i, b"v" * 1000) for i in range(40)) + b"X-One: " + b"o" * 16000 + b"\r\n"
    )
    status, _, body = _exchange(endpoint, _head(extra=fields + b"Connection: close\r\n"))
    assert status == 200, body
    assert json.loads(body) == {"endpoints": ["bounded"]}


def test_a_head_that_never_ends_is_cut_off(endpoint):
    sent = 0
    answer = b""
    with socket.create_connection(("127.0.0.1", endpoint.port), timeout=10) as sock:
        sock.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        try:
            while sent < 4 * 1024 * 1024:
                sock.sendall(b"s" * 8192)
                sent += 8192
                time.sleep(0.001)  # pieces, as a slow client sends them (pacing only; nothing is timed)
        except (BrokenPipeError, ConnectionResetError):
            pass
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    assert b"Request head over 81920 bytes and not finished" in answer
    assert sent < 2 * 1024 * 1024  # closed long before the client was done
    _still_serving(endpoint)


def _container_port(endpoint) -> int:
    (variant,) = endpoint.runtime.variants
    (process,) = variant.processes
    return process.port


def test_a_64_kib_header_to_the_container_is_refused_in_the_runtimes_shape(endpoint):
    class Container:
        port = _container_port(endpoint)

    status, headers, body = _exchange(Container, _head(extra=b"X-Big: " + b"b" * 65536 + b"\r\n"))
    assert status == 400
    assert headers["content-type"] == "application/json" and headers["connection"] == "close"
    assert json.loads(body) == {
        "code": 400,
        "type": "RequestHeaderFieldsTooLarge",
        "message": "Request header X-Big is 65545 bytes, over the 16384-byte limit of one header; "
        "send large data in the body, not in headers or the URL.",
    }
    status, _, body = _exchange(Container, _head(extra=b"Connection: close\r\n"))
    assert status == 200  # the container keeps serving
    _still_serving(endpoint)


def test_the_container_bounds_the_request_line_and_field_count_alike(endpoint):
    class Container:
        port = _container_port(endpoint)

    status, _, body = _exchange(Container, _head("/" + "a" * (16 * 1024)))
    assert status == 400
    assert json.loads(body)["message"].startswith("Request line over 16384 bytes")
    status, _, body = _exchange(Container, _head(extra=b"".join(b"X-F%d: 1\r\n" % i for i in range(101))))
    assert status == 400
    assert json.loads(body)["message"] == "More than 100 request header fields (at x-f99); send fewer."
