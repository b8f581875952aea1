"""The kit's HTTP/1.1 server (smkit.http1) over real sockets on 127.0.0.1, with trivial handlers.

Each test runs a :class:`~smkit.http1.runner.Server` on its own event loop in a thread (or, for signals, in
a child process) and talks to it with raw sockets or ``http.client``; waits are on events (an answer, a
close, a line from the child), never on time.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import signal
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from smkit.http1 import Flow, Handler, Request, Server
from smkit.http1.connection import message_refusal
from smkit.local.head_refusal import service_refusal
from smkit.serving.front.exchange import runtime_refusal

TIMEOUT = 30.0  # a bound on a hang, never a measured time


class Running:
    """A server on a thread of its own; ``call`` runs a function on its loop."""

    def __init__(self, handler: Handler, **options: Any) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.server = Server(handler, **options)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.loop.run_until_complete(self.server.serve(self.sock))

    def call(self, function: Callable[[], object]) -> None:
        self.loop.call_soon_threadsafe(function)

    def stop(self) -> None:
        self.call(self.server.stop)
        self.thread.join(TIMEOUT)
        assert not self.thread.is_alive(), "the server did not stop"
        self.loop.close()

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=TIMEOUT)


def read_until_closed(sock: socket.socket) -> bytes:
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    return answer


class Response:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def getheader(self, name: str) -> str | None:
        return self.headers.get(name)


def read_responses(sock: socket.socket, count: int) -> list[Response]:
    """``count`` responses (framed by ``content-length``) read in order from one connection."""
    buffer = b""
    responses = []
    for _ in range(count):
        while b"\r\n\r\n" not in buffer:
            chunk = sock.recv(65536)
            assert chunk, f"closed before a whole head: {buffer!r}"
            buffer += chunk
        head, buffer = buffer.split(b"\r\n\r\n", 1)
        status_line, *fields = head.decode("latin-1").split("\r\n")
        headers = {name.lower(): value.strip() for name, value in (f.split(":", 1) for f in fields)}
        length = int(headers.get("content-length", "0"))
        while len(buffer) < length:
            chunk = sock.recv(65536)
            assert chunk, "closed before the whole body"
            buffer += chunk
        responses.append(Response(int(status_line.split()[1]), headers, buffer[:length]))
        buffer = buffer[length:]
    assert not buffer
    return responses


class Echo(Handler):
    """Answers ``METHOD target`` and the body; ``/hold`` requests wait until ``release``."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.held: list[Request] = []
        self.holding = threading.Event()

    def request(self, request: Request) -> None:
        self.seen.append(request.path)
        if request.path == "/hold":
            self.held.append(request)
            self.holding.set()
            return
        if request.path == "/raise":
            raise RuntimeError("handler bug")
        info = {
            "method": request.method,
            "target": request.target.decode(),
            "path": request.path,
            "version": request.version,
            "headers": [[n.decode(), v.decode()] for n, v in request.headers],
            "body": request.body.decode(),
        }
        request.respond(200, [(b"content-type", b"application/json")], json.dumps(info).encode())

    def release(self) -> None:
        for request in self.held:
            request.respond(200, [(b"x-held", b"1")], b"released")
        self.held.clear()


@pytest.fixture
def echo() -> Iterator[tuple[Running, Echo]]:
    handler = Echo()
    running = Running(handler)
    yield running, handler
    running.stop()


def test_a_request_reaches_the_handler_and_its_answer_the_client(echo: tuple[Running, Echo]) -> None:
    running, _ = echo
    client = http.client.HTTPConnection("127.0.0.1", running.port, timeout=TIMEOUT)
    client.request("POST", "/a%20b?x=1", body=b"payload", headers={"X-Thing": "v"})
    response = client.getresponse()
    info = json.loads(response.read())
    assert response.status == 200 and response.getheader("date")
    assert info["method"] == "POST" and info["target"] == "/a%20b?x=1" and info["path"] == "/a b"
    assert ["x-thing", "v"] in info["headers"] and info["body"] == "payload" and info["version"] == "1.1"
    client.request("GET", "/again")  # the same connection is kept
    assert client.getresponse().status == 200
    client.close()


def test_an_idle_connection_is_closed_after_the_keep_alive_period() -> None:
    running = Running(Echo(), keep_alive_seconds=0.05)
    try:
        with running.connect() as sock:
            sock.sendall(b"GET /one HTTP/1.1\r\nHost: x\r\n\r\n")
            (response,) = read_responses(sock, 1)
            assert response.status == 200
            assert sock.recv(1) == b""  # the server closes the idle connection (no timeout on our side)
    finally:
        running.stop()


def test_pipelined_requests_are_answered_in_order(echo: tuple[Running, Echo]) -> None:
    running, handler = echo
    with running.connect() as sock:
        sock.sendall(
            b"GET /hold HTTP/1.1\r\nHost: x\r\n\r\n"
            b"POST /second HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi"
            b"GET /third HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        assert handler.holding.wait(TIMEOUT)
        assert handler.seen == ["/hold"]  # the next request waits for the first's answer
        running.call(handler.release)
        first, second, third = read_responses(sock, 3)
    assert first.getheader("x-held") == "1"
    assert handler.seen == ["/hold", "/second", "/third"]
    assert second.status == third.status == 200


def test_expect_100_continue_is_answered_before_the_body_is_sent(echo: tuple[Running, Echo]) -> None:
    running, _ = echo
    with running.connect() as sock:
        sock.sendall(b"POST /up HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
        interim = b""
        while not interim.endswith(b"\r\n\r\n"):
            interim += sock.recv(1)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(b"data")
        (response,) = read_responses(sock, 1)
    assert response.status == 200


def test_a_malformed_request_is_refused_and_the_server_keeps_serving(echo: tuple[Running, Echo]) -> None:
    running, _ = echo
    with running.connect() as sock:
        sock.sendall(b"GET /x HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n12")
        answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["message"].startswith("Invalid HTTP request")
    with running.connect() as sock:
        sock.sendall(b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_responses(sock, 1)[0].status == 200


def test_a_handler_that_raises_is_answered_500(echo: tuple[Running, Echo]) -> None:
    running, _ = echo
    with running.connect() as sock:
        sock.sendall(b"GET /raise HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 500 Internal Server Error\r\n") and b"handler bug" in answer


HEAD_20K = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 20_000 + b"\r\n\r\n"
TOO_BIG = (
    "Request header X-Big is 20009 bytes, over the 16384-byte limit of one header; "
    "send large data in the body, not in headers or the URL."
)


@pytest.mark.parametrize(
    ("refusal", "expected"),
    [
        (message_refusal, {"message": TOO_BIG}),
        (runtime_refusal, {"code": 400, "type": "RequestHeaderFieldsTooLarge", "message": TOO_BIG}),
        (service_refusal, {"message": TOO_BIG}),
    ],
    ids=["default", "container", "gateway"],
)
def test_a_head_over_the_limits_is_refused_in_the_servers_shape(
    refusal: Any, expected: dict[str, Any]
) -> None:
    running = Running(Echo(), refusal=refusal)
    try:
        with running.connect() as sock:
            sock.sendall(HEAD_20K)
            answer = read_until_closed(sock)
        head, body = answer.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 400 Bad Request\r\n")
        assert b"content-type: application/json" in head and b"connection: close" in head
        assert (b"x-amzn-RequestId: " in head) == (refusal is service_refusal)
        assert json.loads(body) == expected
        with running.connect() as sock:  # the server keeps serving
            sock.sendall(b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
            assert read_responses(sock, 1)[0].status == 200
    finally:
        running.stop()


def test_a_head_that_never_ends_is_refused_past_line_and_headers_limits(echo: tuple[Running, Echo]) -> None:
    running, _ = echo
    with running.connect() as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        answer = b""
        try:
            while True:  # in pieces, until the server refuses and closes
                sock.sendall(b"s" * 8192)
        except (BrokenPipeError, ConnectionResetError):
            pass
        with contextlib.suppress(ConnectionResetError):
            answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 400 ") and b"Request head over 81920 bytes and not finished" in answer


def test_a_body_over_the_limit_is_drained_and_answered_by_the_handler() -> None:
    class Limited(Echo):
        max_body = 10

        def request(self, request: Request) -> None:
            if request.too_large is not None:
                request.respond(413, body=b"too large: %d" % request.too_large)
            else:
                super().request(request)

    running = Running(Limited())
    try:
        with running.connect() as sock:
            sock.sendall(b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + b"z" * 100)
            sock.sendall(b"POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
            sock.sendall(b"8\r\n12345678\r\n8\r\n12345678\r\n0\r\n\r\n")
            declared, chunked = read_responses(sock, 2)
        assert (declared.status, chunked.status) == (413, 413)
    finally:
        running.stop()


class Streamer(Handler):
    """Streams 64 KiB chunks from a task until back-pressure paused it once, then a last one."""

    def __init__(self) -> None:
        self.paused = threading.Event()
        self.resumed = threading.Event()
        self.sent = 0

    def request(self, request: Request) -> None:
        asyncio.get_running_loop().create_task(self._stream(request))

    async def _stream(self, request: Request) -> None:
        handler = self

        class Watched(Flow):
            def pause(self) -> None:
                handler.paused.set()
                super().pause()

            def resume(self) -> None:
                if handler.paused.is_set():
                    handler.resumed.set()
                super().resume()

        flow = Watched()
        chunk = b"c" * 65536
        request.stream(200, [(b"content-type", b"application/octet-stream")], chunk, flow=flow)
        self.sent = len(chunk)
        while not self.paused.is_set():
            await flow.wait()
            request.write(chunk)
            self.sent += len(chunk)
            await asyncio.sleep(0)  # let the loop flush and report a full buffer
        await flow.wait()  # resumes only once the client reads
        request.write(b"end")
        self.sent += 3
        request.finish()


def test_a_streamed_response_is_chunked_with_back_pressure() -> None:
    handler = Streamer()
    running = Running(handler)
    try:
        with running.connect() as sock:
            sock.sendall(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
            assert handler.paused.wait(TIMEOUT)  # the client reads nothing: the producer is paused
            assert not handler.resumed.is_set()
            response = http.client.HTTPResponse(sock)
            response.begin()
            body = response.read()  # reading resumes the producer; the body ends with the last chunk
        assert response.getheader("transfer-encoding") == "chunked"
        assert handler.resumed.is_set() and len(body) == handler.sent and body.endswith(b"end")
    finally:
        running.stop()


def test_a_graceful_stop_finishes_the_request_in_flight(echo: tuple[Running, Echo]) -> None:
    running, handler = echo
    with running.connect() as sock, running.connect() as idle:
        idle.sendall(b"GET /idle HTTP/1.1\r\nHost: x\r\n\r\n")
        read_responses(idle, 1)
        sock.sendall(b"GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
        assert handler.holding.wait(TIMEOUT)
        running.call(running.server.stop)
        assert idle.recv(1) == b""  # the idle connection is closed at once
        running.call(handler.release)
        (response,) = read_responses(sock, 1)
        assert response.status == 200 and response.getheader("connection") == "close"
        assert sock.recv(1) == b""
    running.thread.join(TIMEOUT)
    assert not running.thread.is_alive()  # serve() returned once the last connection closed


CHILD = textwrap.dedent(
    """
    import asyncio, socket, sys
    from smkit.http1 import Handler, Server

    held = []

    class Hold(Handler):
        def request(self, request):
            held.append(request)
            print("held", flush=True)

    def answer(sig):
        for request in held:
            request.respond(200, body=b"signal %d" % sig)  # in flight when the signal came

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    print(sock.getsockname()[1], flush=True)
    server = Server(Hold(), on_signal=answer)
    asyncio.run(server.serve(sock, signals=True))
    print("stopped by", server.signal, flush=True)
    """
)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_stops_the_server_gracefully_with_status_0(sig: signal.Signals) -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        port = int(child.stdout.readline())
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert child.stdout.readline() == "held\n"
            child.send_signal(sig)
            (response,) = read_responses(sock, 1)
            assert sock.recv(1) == b""  # then the connection is closed
        assert response.status == 200 and response.body == b"signal %d" % sig
        assert child.stdout.readline() == f"stopped by {int(sig)}\n"
        assert child.wait(TIMEOUT) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


class Tunnel(Echo):
    """Takes upgrades to ``raw``: the connection echoes bytes and is stopped with the server."""

    def wants_upgrade(self, request: Request) -> bool:
        return request.header(b"upgrade") == b"raw"

    def upgraded(self, request: Request, transport: asyncio.Transport, rest: bytes) -> None:
        server = request.conn.server

        class Raw(asyncio.Protocol):
            def data_received(self, data: bytes) -> None:
                transport.write(data)

            def connection_lost(self, exc: Exception | None) -> None:
                server.closed(self)

            def shutdown(self) -> None:
                transport.write(b"bye")
                transport.close()

            def abort(self) -> None:
                transport.abort()

        raw = Raw()
        server.connections.add(raw)
        transport.set_protocol(raw)
        transport.write(
            b"HTTP/1.1 101 Switching Protocols\r\nupgrade: raw\r\nconnection: upgrade\r\n\r\n" + rest
        )


def test_an_upgrade_hands_the_connection_to_the_handler() -> None:
    running = Running(Tunnel())
    try:
        with running.connect() as sock:
            sock.sendall(b"GET /t HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: raw\r\n\r\nfirst")
            answer = b""
            while not answer.endswith(b"first"):
                answer += sock.recv(65536)
            assert answer.startswith(b"HTTP/1.1 101 ")
            sock.sendall(b"GET / HTTP/1.1\r\n\r\n")  # no longer parsed: echoed
            echoed = b""
            while len(echoed) < 18:
                echoed += sock.recv(65536)
            assert echoed == b"GET / HTTP/1.1\r\n\r\n"
            running.call(running.server.stop)
            assert read_until_closed(sock) == b"bye"  # stopped with the server's connections
    finally:
        running.stop()
