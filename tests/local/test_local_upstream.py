"""The gateway's client to its containers (smkit/local/upstream.py) against real servers on 127.0.0.1.

Each server is a small asyncio server that answers as the test needs: keep-alive reuse, a kept-alive
connection the server closed while idle (retried once), a server that never answers (read timeout), a
streamed answer read with back-pressure, an answer cut off mid-body.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from smkit.local.upstream import HIGH_WATER, Pool, UpstreamClosed, UpstreamConnectError, UpstreamTimeout

OK = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok"
Serve = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return await reader.readexactly(length)


async def _with_server(serve: Serve, test: Callable[[Pool], Awaitable[None]]) -> list[int]:
    """Run ``test`` with a pool to a server running ``serve`` per connection; the connections it saw."""
    connections: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(len(connections))
        try:
            await serve(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    pool = Pool("127.0.0.1", port)
    try:
        await test(pool)
    finally:
        pool.close()
        server.close()
    return connections


def test_requests_reuse_one_kept_alive_connection() -> None:
    bodies: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            bodies.append(await _read_request(reader))
            writer.write(OK)

    async def test(pool: Pool) -> None:
        for i in range(3):
            status, fields, body = await pool.request(
                "POST", "/invocations", body=b"x" * i, headers={"Content-Type": "text/csv"}, timeout_s=10
            )
            assert (status, dict(fields)[b"content-type"], body) == (200, b"text/plain", b"ok")

    assert asyncio.run(_with_server(serve, test)) == [0]
    assert bodies == [b"", b"x", b"xx"]


def test_a_connection_closed_while_idle_is_retried_once_on_a_new_one() -> None:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(OK)
        await writer.drain()
        # The container's keep-alive ran out: it closes the connection while the pool keeps it idle.

    async def test(pool: Pool) -> None:
        assert (await pool.request("GET", "/ping", timeout_s=10))[0] == 200
        assert (await pool.request("GET", "/ping", timeout_s=10))[0] == 200

    assert asyncio.run(_with_server(serve, test)) == [0, 1]


def test_a_container_that_closes_before_answering_twice_is_an_error() -> None:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)  # and closes without a word

    async def test(pool: Pool) -> None:
        with pytest.raises(UpstreamClosed, match="without sending a response") as caught:
            await pool.request("POST", "/invocations", body=b"x", timeout_s=10)
        assert caught.value.before_answer

    assert asyncio.run(_with_server(serve, test)) == [0, 1]  # tried twice


def test_no_answer_within_the_timeout_is_a_timeout() -> None:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        await reader.read()  # never answers; returns when the client gives up

    async def test(pool: Pool) -> None:
        with pytest.raises(UpstreamTimeout, match="sent nothing for 0.2 s"):
            await pool.request("POST", "/invocations", body=b"x", timeout_s=0.2)

    asyncio.run(_with_server(serve, test))


def test_a_refused_connection_is_a_connect_error() -> None:
    async def test() -> None:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        with pytest.raises(UpstreamConnectError, match=f"127.0.0.1:{port}"):
            await Pool("127.0.0.1", port).request("GET", "/ping", timeout_s=5)

    asyncio.run(test())


def test_a_streamed_answer_arrives_as_sent_and_pauses_the_socket_while_unread() -> None:
    size = 4 * HIGH_WATER
    sent = asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        writer.write(b"5\r\nfirst\r\n")
        await writer.drain()
        await sent.wait()  # the client has the first chunk
        block = b"y" * HIGH_WATER
        for _ in range(4):
            writer.write(b"%x\r\n%s\r\n" % (len(block), block))
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        await _read_request(reader)  # the connection is kept alive for the next request
        writer.write(OK)

    async def test(pool: Pool) -> None:
        conn = await pool.open_stream("POST", "/invocations", body=b"x", timeout_s=10)
        assert conn.status == 200
        transport = conn.transport
        assert transport is not None
        paused = asyncio.Event()
        pause_reading = transport.pause_reading

        def pause() -> None:
            pause_reading()
            paused.set()

        transport.pause_reading = pause  # type: ignore[method-assign]
        chunks = conn.chunks()
        assert await anext(chunks) == b"first"
        sent.set()
        # Unread, the answer fills the buffer past HIGH_WATER: the pool stops reading the socket.
        await paused.wait()
        received = 0
        async for chunk in chunks:
            received += len(chunk)
        assert received == size
        conn.release()
        assert (await pool.request("POST", "/invocations", timeout_s=10))[2] == b"ok"

    assert asyncio.run(_with_server(serve, test)) == [0]


def test_an_answer_cut_off_mid_body_is_an_error_after_its_first_part() -> None:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nfirst\r\n")
        await writer.drain()

    async def test(pool: Pool) -> None:
        conn = await pool.open_stream("POST", "/invocations", body=b"x", timeout_s=10)
        chunks = conn.chunks()
        assert await anext(chunks) == b"first"
        with pytest.raises(UpstreamClosed, match="before the end of its answer") as caught:
            await anext(chunks)
        assert not caught.value.before_answer
        conn.release()

    asyncio.run(_with_server(serve, test))


def test_a_body_framed_by_the_close_ends_at_the_close() -> None:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nall of it")
        await writer.drain()

    async def test(pool: Pool) -> None:
        status, _, body = await pool.request("POST", "/invocations", body=b"x", timeout_s=10)
        assert (status, body) == (200, b"all of it")

    asyncio.run(_with_server(serve, test))
