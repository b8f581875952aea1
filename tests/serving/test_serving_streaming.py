"""Streamed answers over a real socket: chunks as produced, errors mid-stream, timeout, back-pressure, cancel."""

from __future__ import annotations

import asyncio
import json
import math
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import streaming_models
from serving_harness import Server, start_server
from waiting import wait_until
from websockets.exceptions import ConnectionClosedError, ConnectionClosedOK, InvalidStatus
from websockets.sync.client import connect

from smkit.serving.front.pool import Job, PoolOptions, Worker, WorkerPool
from smkit.serving.front.relay import StreamControl
from smkit.serving.worker.streams import encode_item, is_stream


class ChunkedReader:
    """A raw HTTP/1.1 client that hands out each chunk of a chunked body as it arrives."""

    def __init__(self, port: int, body: dict[str, object], timeout: float = 60.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        data = json.dumps(body).encode()
        self.sock.sendall(
            b"POST /invocations HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(data), data)
        )
        self.file = self.sock.makefile("rb")
        self.status = int(self.file.readline().split()[1])
        self.headers: dict[str, str] = {}
        while (line := self.file.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            self.headers[name.strip().lower()] = value.strip()

    def chunks(self) -> Iterator[bytes]:
        """Each chunk; raises ConnectionError when the body ends without its last chunk."""
        while True:
            size_line = self.file.readline()
            if not size_line:
                raise ConnectionError("the connection closed before the last chunk")
            size = int(size_line.strip(), 16)
            if size == 0:
                assert self.file.readline() == b"\r\n"
                return
            data = self.file.read(size)
            assert self.file.readline() == b"\r\n"
            yield data

    def close(self) -> None:
        self.file.close()
        self.sock.close()


@pytest.fixture(scope="module")
def stream_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("stream-models")
    return {
        "streaming": streaming_models.write_model(root, "streaming", streaming_models.STREAMING),
        "predict": streaming_models.write_model(root, "predict", streaming_models.PREDICT_STREAM),
    }


@pytest.fixture(scope="module")
def stream_server(stream_models: dict[str, Path], server_tmp: Path) -> Iterator[Server]:
    server = start_server(server_tmp, ["--model", str(stream_models["streaming"])])
    yield server
    server.stop()


def test_first_chunk_arrives_while_the_handler_still_runs(stream_server: Server, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    reader = ChunkedReader(stream_server.port, {"chunks": 5, "delay": 0.4, "gate": str(gate)})
    try:
        assert reader.status == 200
        assert reader.headers["transfer-encoding"] == "chunked"
        assert "content-length" not in reader.headers
        received = []
        for data in reader.chunks():
            received.append(data)
            gate.touch()  # chunks 1-4 wait for this file: chunk 0 came before the handler finished
        assert received == [f"chunk {i}\n".encode() for i in range(5)]
    finally:
        reader.close()
    assert stream_server.request("GET", "/ping").status == 200
    line = wait_until(lambda: _stream_log(stream_server, 5), what="the stream's access-log line")
    assert line["response_bytes"] == sum(len(d) for d in received)
    assert 0 < line["ttfb_ms"] < line["latency_ms"]


def test_error_mid_stream_cuts_the_body_and_is_logged(stream_server: Server) -> None:
    reader = ChunkedReader(stream_server.port, {"chunks": 5, "fail_at": 2})
    received = []
    try:
        with pytest.raises(ConnectionError):
            for data in reader.chunks():
                received.append(data)
    finally:
        reader.close()
    assert received == [b"chunk 0\n", b"chunk 1\n"]
    line = wait_until(lambda: _stream_log(stream_server, 2), what="the failed stream's access-log line")
    assert line["stream_error"] == "ValueError: failed before chunk 2"
    assert stream_server.invoke(json.dumps({"chunks": 1}), "application/json").body == b"chunk 0\n"


def test_error_before_the_first_chunk_is_an_ordinary_error(stream_server: Server) -> None:
    response = stream_server.invoke(json.dumps({"fail_at": 0}), "application/json")
    assert response.status == 500
    assert response.json()["message"] == "failed before chunk 0"
    assert "content-length" in response.headers


def test_async_generator_streams(stream_server: Server) -> None:
    reader = ChunkedReader(stream_server.port, {"chunks": 3, "kind": "async"})
    try:
        assert list(reader.chunks()) == [b"chunk 0\n", b"chunk 1\n", b"chunk 2\n"]
    finally:
        reader.close()
    reader = ChunkedReader(stream_server.port, {"chunks": 3, "kind": "async", "fail_at": 1})
    try:
        with pytest.raises(ConnectionError):
            list(reader.chunks())
    finally:
        reader.close()


def test_keep_alive_after_a_stream(stream_server: Server) -> None:
    """The connection serves the next request after a complete stream."""
    reader = ChunkedReader(stream_server.port, {"chunks": 3})
    try:
        assert list(reader.chunks()) == [b"chunk 0\n", b"chunk 1\n", b"chunk 2\n"]
        data = b'{"chunks": 1}'
        reader.sock.sendall(
            b"POST /invocations HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(data), data)
        )
        assert reader.file.readline().startswith(b"HTTP/1.1 200")
        while reader.file.readline() != b"\r\n":
            pass
        assert list(reader.chunks()) == [b"chunk 0\n"]
    finally:
        reader.close()


def test_slow_client_holds_the_handler_back(stream_server: Server, tmp_path: Path) -> None:
    """Back-pressure: what the handler has produced never runs far ahead of what the client has read."""
    progress = tmp_path / "progress"
    block = 1 << 20
    reader = ChunkedReader(stream_server.port, {"chunks": 256, "block": block, "progress": str(progress)})
    received = ahead = 0
    try:
        for data in reader.chunks():
            received += len(data)
            produced = int(progress.read_text()) * block if progress.exists() else 0
            ahead = max(ahead, produced - received)
    finally:
        reader.close()
    assert received == 256 * block
    # Socket buffers on both hops and the front end's write buffer hold a few MiB at most.
    assert ahead < 48 * block, f"the handler ran {ahead / block:.0f} MiB ahead of the client"


def test_client_gone_stops_the_handler(stream_server: Server, tmp_path: Path) -> None:
    closed = tmp_path / "closed"
    gate = tmp_path / "gate"
    reader = ChunkedReader(
        stream_server.port, {"chunks": 10**9, "gate": str(gate), "closed": str(closed), "block": 1024}
    )
    next(reader.chunks())
    reader.close()
    gate.touch()
    wait_until(closed.exists, what="the handler's generator to be closed after the client left")
    line = wait_until(
        lambda: next(
            (x for x in _stream_lines(stream_server) if "client closed" in x.get("stream_error", "")), None
        ),
        what="the cancelled stream's access-log line",
    )
    assert line["chunks"] >= 1


def test_predict_fn_generator_with_default_output_fn(
    stream_models: dict[str, Path], server_tmp: Path
) -> None:
    server = start_server(server_tmp, ["--model", str(stream_models["predict"])])
    try:
        response = server.invoke("[1, 2, 3]", "application/json")
        assert response.status == 200
        assert response.headers["transfer-encoding"] == "chunked"
        lines = [json.loads(x) for x in response.body.decode().splitlines()]
        assert lines == [{"index": i, "double": v * 2} for i, v in enumerate([1, 2, 3])]
        # No bidirectional_fn: the WebSocket handshake is refused with the worker's 404 and its reason.
        with pytest.raises(InvalidStatus) as info:
            connect(f"ws://127.0.0.1:{server.port}/invocations-bidirectional-stream", open_timeout=30)
        assert info.value.response.status_code == 404
        assert b"define bidirectional_fn" in info.value.response.body
    finally:
        server.stop()


def test_timeout_applies_to_the_whole_stream(
    stream_models: dict[str, Path], server_tmp: Path, tmp_path: Path
) -> None:
    server = start_server(
        server_tmp,
        ["--model", str(stream_models["streaming"])],
        env={"SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS": "2"},
    )
    try:
        # Chunk 1 waits for a gate that never opens: the stream ends at the deadline, cut off.
        reader = ChunkedReader(server.port, {"chunks": 3, "gate": str(tmp_path / "never")})
        received = []
        try:
            with pytest.raises(ConnectionError):
                for data in reader.chunks():
                    received.append(data)
        finally:
            reader.close()
        assert received == [b"chunk 0\n"]
        line = wait_until(lambda: _stream_log(server, 1), what="the timed-out stream's access-log line")
        assert "SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS" in line["stream_error"]
        assert "within 2 s" in line["stream_error"]
        assert server.invoke(json.dumps({"chunks": 1}), "application/json").body == b"chunk 0\n"
    finally:
        server.stop()


def test_stream_items() -> None:
    def gen() -> Iterator[int]:
        yield 1

    assert is_stream(gen()) and is_stream(iter([b"a"]))
    assert not any(is_stream(x) for x in (b"a", "a", [1], {"a": 1}, None, bytearray(b"a")))
    assert encode_item("é") == "é".encode()
    assert encode_item(memoryview(b"ab")) == b"ab"
    assert encode_item({"a": [1, 2]}) == b'{"a": [1, 2]}\n'


def _stream_lines(server: Server) -> list[dict[str, object]]:
    lines = []
    for raw in server.log().splitlines():
        if raw.startswith("{") and '"streamed": true' in raw:
            lines.append(json.loads(raw))
    return lines


def _session_log(server: Server, messages_in: int) -> dict[str, object] | None:
    for raw in reversed(server.log().splitlines()):
        if raw.startswith("{") and '"websocket": true' in raw:
            line = json.loads(raw)
            if line["messages_in"] == messages_in:
                return line
    return None


def _stream_log(server: Server, chunks: int) -> dict[str, object] | None:
    """The latest streamed access-log line with ``chunks`` chunks."""
    return next((x for x in reversed(_stream_lines(server)) if x["chunks"] == chunks), None)


def test_websocket_round_trip(stream_server: Server, tmp_path: Path) -> None:
    """/invocations-bidirectional-stream: text and binary messages both ways, ping/pong, the handler's end."""
    url = f"ws://127.0.0.1:{stream_server.port}/invocations-bidirectional-stream"
    with connect(url, open_timeout=30) as ws:
        ws.send("hello")
        assert ws.recv(timeout=30) == "echo hello"
        ws.send(b"\x00\x01\x02")
        assert ws.recv(timeout=30) == b"\x02\x01\x00"
        assert ws.ping().wait(30)  # the platform's pings are answered
        ws.send("end")
        assert ws.recv(timeout=30) == "bye"
        with pytest.raises(ConnectionClosedOK):
            ws.recv(timeout=30)
    line = wait_until(lambda: _session_log(stream_server, 3), what="the session's access-log line")
    assert line["messages_out"] == 3 and "session_error" not in line
    assert stream_server.invoke(json.dumps({"chunks": 1}), "application/json").body == b"chunk 0\n"


def test_websocket_handler_error_closes_with_1011(stream_server: Server) -> None:
    url = f"ws://127.0.0.1:{stream_server.port}/invocations-bidirectional-stream"
    with connect(url, open_timeout=30) as ws:
        ws.send("boom")
        with pytest.raises(ConnectionClosedError) as info:
            ws.recv(timeout=30)
    assert info.value.rcvd is not None and info.value.rcvd.code == 1011
    assert info.value.rcvd.reason == "RuntimeError: boom requested"


def test_websocket_client_gone_ends_the_session(stream_server: Server, tmp_path: Path) -> None:
    closed = tmp_path / "closed"
    url = f"ws://127.0.0.1:{stream_server.port}/invocations-bidirectional-stream"
    with connect(url, open_timeout=30) as ws:
        ws.send(f"closed:{closed}")
        assert ws.recv(timeout=30) == "noted"
    wait_until(closed.exists, what="the handler's session to end after the client closed")


def test_http10_client_gets_a_body_ended_by_the_close(stream_server: Server) -> None:
    """HTTP/1.0 has no chunked encoding: the streamed body is sent as it comes and ends with the connection."""
    with socket.create_connection(("127.0.0.1", stream_server.port), timeout=60) as sock:
        data = b'{"chunks": 3}'
        sock.sendall(
            b"POST /invocations HTTP/1.0\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(data), data)
        )
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert b"transfer-encoding" not in head.lower() and b"content-length" not in head.lower()
    assert body == b"chunk 0\nchunk 1\nchunk 2\n"


class _Recorder:
    """The front end's side of the pool, recording what it is told."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    def answer(self, token: object, reply: object, pid: int) -> None:
        self.calls.append(("answer", token))

    def stream_start(self, token: object, reply: object, pid: int, control: object) -> None:
        self.calls.append(("start", token))

    def stream_chunk(self, token: object, data: bytes) -> None:
        self.calls.append(("chunk", token))

    def stream_end(self, token: object, error: str | None) -> None:
        self.calls.append(("end", token))


def test_sweep_keeps_a_long_session_and_drops_a_lost_job() -> None:
    """A job whose worker marked it as having no deadline (a bidirectional session lasts as long as the
    client wants) is left alone by the deadline sweep, however old; a queued job that old is answered 504
    and dropped."""

    async def sweep() -> WorkerPool:
        pool = WorkerPool(
            PoolOptions(workers=1, python=sys.executable, config={}, timeout=1.0, queue_size=1, environ={})
        )
        recipient = _Recorder()
        long_ago = time.monotonic() - 10_000
        session = Job(1, b"", -1, "session", recipient, long_ago, long_ago + 1.0)
        session.answered = True
        session.control = StreamControl(1, SimpleNamespace(transport=None))
        pool.workers[0] = Worker(0, SimpleNamespace(pid=4321))  # type: ignore[arg-type]
        pool.board.run(0, 1)  # what the worker that took the session writes
        pool.board.extend(0, math.inf)
        pool.jobs = {1: session, 2: Job(2, b"", -1, "lost", recipient, long_ago, long_ago + 1.0)}
        pool._sweep()
        assert recipient.calls == [("answer", "lost")]
        return pool

    pool = asyncio.run(sweep())
    assert list(pool.jobs) == [1]


def test_async_stream_past_the_deadline_then_the_worker_streams_again(
    stream_models: dict[str, Path], server_tmp: Path, tmp_path: Path
) -> None:
    """An async generator interrupted by the timeout leaves nothing running in the worker's event loop."""
    server = start_server(
        server_tmp,
        ["--model", str(stream_models["streaming"])],
        env={"SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS": "4", "SAGEMAKER_MODEL_SERVER_WORKERS": "1"},
    )
    try:
        # The first item does not come in time (5 s pause, 4 s limit): an ordinary 504, nothing streamed.
        resumed = tmp_path / "resumed"
        reader = ChunkedReader(
            server.port, {"chunks": 1, "kind": "async", "delay": 5, "resumed": str(resumed)}
        )
        try:
            assert reader.status == 504
        finally:
            reader.close()
        # The next stream runs the worker's event loop past the moment the first one's pause ends.
        reader = ChunkedReader(server.port, {"chunks": 5, "kind": "async", "delay": 0.5})
        try:
            assert list(reader.chunks()) == [f"chunk {i}\n".encode() for i in range(5)]
        finally:
            reader.close()
        assert not resumed.exists(), "the interrupted generator went on running in the worker"
    finally:
        server.stop()


def test_one_caller_streams_from_the_worker_that_finished_last(stream_server: Server) -> None:
    """A worker is free again at the end of its stream (``DONE``), not at its head: one caller's streamed
    and whole answers all come from one worker (smkit/serving/front/pinning.py)."""
    before = len(stream_server.log())
    for _ in range(3):
        reader = ChunkedReader(stream_server.port, {"chunks": 2})
        try:
            assert list(reader.chunks()) == [b"chunk 0\n", b"chunk 1\n"]
        finally:
            reader.close()
        whole = stream_server.request(
            "POST", "/invocations", json.dumps({"whole": True}), {"Content-Type": "application/json"}
        )
        assert whole.status == 200

    def access_lines() -> list[dict[str, object]] | None:
        lines = [json.loads(x) for x in stream_server.log()[before:].splitlines() if '"/invocations"' in x]
        return lines if len(lines) == 6 else None

    lines = wait_until(access_lines, timeout=30, what="the six access-log lines")
    assert len({line["pid"] for line in lines}) == 1
