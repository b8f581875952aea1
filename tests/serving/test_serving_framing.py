"""HTTP/1.1 framing at the socket: ambiguous, malformed or oversized requests are refused, the server keeps serving.

The request-smuggling ingredients (RFC 9112 §6.3, §5.2, §2.2): two lengths, length plus chunking, bad chunk
sizes, bare-LF line ends, obsolete header folding (llhttp refuses them; gunicorn-h1c 0.6.9, not used, accepts
the last two), and request heads beyond AWS's bounds (smkit/http1/head_limits.py adds them to llhttp).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from serving_harness import Server, start_server

HEAD = b"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: text/csv\r\n"
LONG_PATH = b"/" + b"a" * 17_000

CASES = {
    "length and chunked": (
        HEAD + b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nA\r\n0\r\n\r\n",
        400,
    ),
    "two different lengths": (HEAD + b"Content-Length: 1\r\nContent-Length: 2\r\n\r\n12", 400),
    "negative length": (HEAD + b"Content-Length: -1\r\n\r\n", 400),
    "bad chunk size": (HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nA\r\n0\r\n\r\n", 400),
    "unknown transfer coding": (HEAD + b"Transfer-Encoding: gzip\r\n\r\n", 400),
    "space in a header name": (HEAD + b"Content Length: 1\r\n\r\n1", 400),
    "bare LF line ends": (b"POST /invocations HTTP/1.1\nHost: x\nContent-Length: 1\n\n1", 400),
    "obsolete line folding": (b"GET /ping HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  folded\r\n\r\n", 400),
    "request target too long": (b"GET " + LONG_PATH + b" HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    "too long after an empty line": (b"\r\nGET " + LONG_PATH + b" HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    "101 header fields": (HEAD + b"".join(b"X-%d: 1\r\n" % i for i in range(101)) + b"\r\n", 400),
    "head over 64 KiB": (HEAD + b"X-Big: " + b"b" * 70_000 + b"\r\n\r\n", 400),
    "HTTP/2 preface": (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400),
}


@pytest.fixture(scope="module")
def constant_server(server_tmp: Path) -> Iterator[Server]:
    server = start_server(server_tmp, ["--constant", "--workers", "2"])
    yield server
    server.stop()


def exchange(port: int, raw: bytes) -> bytes:
    """Send raw bytes on a fresh connection; return what the server answers until it closes or goes quiet."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(raw)
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except TimeoutError:
            pass
    return answer


def status_of(answer: bytes) -> int:
    line = answer.split(b"\r\n", 1)[0]
    assert line.startswith(b"HTTP/1.1 "), answer[:200]
    return int(line.split()[1])


@pytest.mark.parametrize("name", list(CASES))
def test_malformed_framing_is_refused_then_good(constant_server: Server, name: str) -> None:
    raw, expected = CASES[name]
    assert status_of(exchange(constant_server.port, raw)) == expected
    assert constant_server.invoke("1", "text/csv").status == 200


def test_chunked_request_body_is_read_like_a_sized_one(chain_server: Server) -> None:
    """A well-formed chunked body (a client without the length up front) gets the same answer."""
    sized = chain_server.invoke("1,2\n3,4\n", "text/csv", accept="application/json")
    assert sized.status == 200
    raw = HEAD + b"Accept: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    raw += b"4\r\n1,2\n\r\n4\r\n3,4\n\r\n0\r\n\r\n"
    answer = exchange(chain_server.port, raw)
    assert status_of(answer) == 200
    assert answer.split(b"\r\n\r\n", 1)[1] == sized.body


def test_a_head_that_never_ends_is_cut_off_at_80_kib(constant_server: Server) -> None:
    """Sent in pieces and never finished, a head is not buffered without end: 400 and closed past 80 KiB
    (the request line's 16 KiB and the headers' 64 KiB)."""
    with socket.create_connection(("127.0.0.1", constant_server.port), timeout=5) as sock:
        sock.sendall(HEAD + b"X-Slow: ")
        sent = 0
        answer = b""
        try:
            while sent < 1024 * 1024:
                sock.sendall(b"s" * 8192)
                sent += 8192
                time.sleep(0.002)
        except (BrokenPipeError, ConnectionResetError):
            pass
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    assert status_of(answer) == 400 and b"Request head over 81920 bytes and not finished" in answer
    assert sent < 512 * 1024  # the server closed the connection long before the client was done
    assert constant_server.invoke("1", "text/csv").status == 200
