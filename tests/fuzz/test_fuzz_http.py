"""The serving front end's HTTP parsing over a real socket (``python -m smkit.serving`` on 127.0.0.1).

Every case opens a connection, writes arbitrary bytes (raw, or a request line and headers of arbitrary
parts with an arbitrary body), closes its writing side and reads until the server closes: the server must
answer with HTTP or nothing and close the connection within its own limits (never hold it open), and after
all cases the front end and the same workers are still there and ``/ping`` answers 200: no crash, no worker
lost or leaked.
"""

from __future__ import annotations

import contextlib
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serving"))  # serving_harness

from serving_harness import Server, start_server  # noqa: E402

from smkit.process import ping  # noqa: E402

ECHO = """\
def model_fn(model_dir):
    return None


def transform_fn(model, data, content_type, accept):
    return data, "application/octet-stream"
"""
CLOSE_BOUND_S = 30.0  # far above the server's own limits below; a connection still open then is a hang


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    model = tmp_path_factory.mktemp("echo")
    (model / "code").mkdir()
    (model / "code" / "inference.py").write_text(ECHO)
    env = {
        "SMKIT_BODY_TIMEOUT_SECONDS": "2",
        "SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS": "5",
        "SMKIT_ACCESS_LOG": "false",
    }
    started = start_server(tmp_path_factory.mktemp("log"), ["--model", str(model)], env=env)
    workers = set(started.children())
    yield started
    try:
        assert started.proc.poll() is None, f"the front end died:\n{started.log()}"
        assert ping(started.port)[0] == 200
        assert set(started.children()) == workers, "workers were lost or leaked"
    finally:
        assert started.stop() == 0


tokens = st.text(st.characters(codec="latin-1"), max_size=20)
requests = st.builds(
    lambda method, path, headers, body: (
        f"{method} {path} HTTP/1.1\r\n".encode("latin-1")
        + b"".join(f"{k}: {v}\r\n".encode("latin-1") for k, v in headers)
        + b"\r\n"
        + body
    ),
    st.sampled_from(["GET", "POST", "PUT", "HEAD", "OPTIONS"]) | tokens,
    st.sampled_from(["/ping", "/invocations", "/models", "/execution-parameters"]) | tokens,
    st.lists(
        st.tuples(
            st.sampled_from(
                ["Content-Length", "Transfer-Encoding", "Content-Type", "Accept", "Expect", "Host"]
            )
            | tokens,
            st.sampled_from(["0", "5", "chunked", "100-continue", "-1", "99999999999999999999"]) | tokens,
        ),
        max_size=6,
    ),
    st.binary(max_size=200),
)


def _exchange(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=CLOSE_BOUND_S) as conn:
        # The server may refuse the request and close first: what it wrote is still read below.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            conn.sendall(data)
            conn.shutdown(socket.SHUT_WR)
        answer = bytearray()
        while True:
            try:
                chunk = conn.recv(65536)
            except ConnectionResetError:
                break
            except TimeoutError as exc:
                raise AssertionError(f"connection still open after {CLOSE_BOUND_S} s for {data!r}") from exc
            if not chunk:
                break
            answer += chunk
    return bytes(answer)


@given(st.binary(max_size=400) | requests)
def test_arbitrary_bytes_get_http_or_nothing_and_the_connection_closes(server: Server, data: bytes) -> None:
    answer = _exchange(server.port, data)
    assert answer == b"" or answer.startswith(b"HTTP/1.1 "), answer[:200]
