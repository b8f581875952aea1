"""TransformRunner's request scheduling against a plain threaded HTTP server on 127.0.0.1.

The server stands in for a container whose workers all run at once, so the test sees exactly how many
requests the job keeps in flight: each request waits at a barrier for MaxConcurrentTransforms partners.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from smkit.batch.client import ContainerClient
from smkit.batch.job import TransformRunner
from smkit.batch.objects import LocalSink, list_inputs
from smkit.batch.options import BatchStrategy, CompressionType, SplitType, TransformOptions, resolve


class Counting(ThreadingHTTPServer):
    """Echoes each body after ``barrier`` partners arrived; records the most requests in flight."""

    daemon_threads = True

    def __init__(self, parties: int) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.barrier = threading.Barrier(parties, timeout=10)
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most = 0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Counting

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with self.server.lock:
            self.server.in_flight += 1
            self.server.most = max(self.server.most, self.server.in_flight)
        try:
            self.server.barrier.wait()
        finally:
            with self.server.lock:
                self.server.in_flight -= 1
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def counting_server(request: pytest.FixtureRequest) -> Iterator[Counting]:
    server = Counting(request.param)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("counting_server", [1, 3], indirect=True)
def test_max_concurrent_transforms_requests_in_flight_and_order_kept(
    counting_server: Counting, tmp_path: Path
) -> None:
    concurrency = counting_server.barrier.parties
    lines = [f"{i},x\n" for i in range(30)]  # a multiple of every concurrency tried: no lone last round
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "rows.csv").write_text("".join(lines))
    options = TransformOptions(
        content_type="text/csv",
        split_type=SplitType.LINE,
        batch_strategy=BatchStrategy.SINGLE_RECORD,
        max_concurrent_transforms=concurrency,
        invocations_max_retries=0,
    )
    runner = TransformRunner(
        client=ContainerClient(f"http://127.0.0.1:{counting_server.server_port}", timeout_s=20),
        resolved=resolve(options, None),
        sink=LocalSink(tmp_path / "out"),
        log=lambda _line: None,
    )
    result = runner.run(list_inputs(str(tmp_path / "in"), compression=CompressionType.NONE))
    assert result.ok, result.summary()
    assert counting_server.most == concurrency
    assert (tmp_path / "out" / "rows.csv.out").read_text() == "".join(lines)
