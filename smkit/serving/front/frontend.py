"""The front end: requests from the HTTP server (:mod:`smkit.http1`) to the worker pool, replies back.

The front end never runs a model hook. It answers ``GET /ping`` and ``GET /execution-parameters``
itself, so a busy or stuck handler can never delay a health check (SageMaker marks an instance
unhealthy when ``/ping`` does not answer within 2 s: docs/hosting-contract.md,
https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-inference-code.html). Every other request
is read in full here, within ``SMKIT_BODY_TIMEOUT_SECONDS`` (a stalled upload never holds a worker) and
the payload limit (413), then queued for the first free worker (:mod:`smkit.serving.front.pool`). One JSON
access-log line per request, with the pid of the worker that answered (written in batches every 50 ms).
:class:`FrontEnd` is the server's :class:`~smkit.http1.Handler`: it is called with each request once its
body is complete, on the event loop, and answers by a call; no task is made per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from smkit.contract import JSON, READINESS_PROBE_AGENT
from smkit.hosting.env import ServingEnv
from smkit.http1 import Handler, Request, status_line
from smkit.http1.responses import header_name, header_value
from smkit.serving.front.adapters import PREFIX as ADAPTERS_PATH
from smkit.serving.front.adapters import Adapters
from smkit.serving.front.chunked import StreamState
from smkit.serving.front.exchange import Exchange
from smkit.serving.front.metrics import Metrics
from smkit.serving.front.pool import WorkerPool
from smkit.serving.front.relay import StreamControl
from smkit.serving.front.sessions import Sessions
from smkit.serving.wire.errors import InferenceError, MethodNotAllowed, PayloadTooLarge
from smkit.serving.wire.messages import BIDI_PATH
from smkit.serving.wire.reply import Reply, error_reply

if TYPE_CHECKING:
    from smkit.serving.front.websocket import WebSocketSession

HEALTHY = Reply(200, b'{"status": "Healthy"}\n', JSON)
# Access-log lines are written together at most this often: one write per batch, not per request.
LOG_FLUSH_SECONDS = 0.05
# Body reads past SMKIT_BODY_TIMEOUT_SECONDS are looked for this often (a tenth of the limit when that
# is shorter, never more often than every 10 ms): one timer for all requests instead of one per request.
BODY_SWEEP_SECONDS = 1.0
MIN_BODY_SWEEP_SECONDS = 0.01
# Response headers the front end writes itself; a handler's own copies are dropped.
FRAMING_HEADERS = frozenset({"content-length", "transfer-encoding", "connection"})
MAX_CACHED_TYPES = 64
# The kit's own start-up wait (smkit/process.py) polls /ping every 50 ms: not access-logged.
OWN_PROBE = (b"user-agent", READINESS_PROBE_AGENT.encode())


class RequestTimeout(InferenceError, status=408):
    """The request body did not arrive within ``SMKIT_BODY_TIMEOUT_SECONDS`` (408)."""


class FrontEnd(Handler):
    """What the HTTP server calls for each request (:class:`smkit.http1.Handler`).

    Args:
        env: the serving environment.
        pool: the model workers.
        workers: worker count, reported by ``/execution-parameters``.
    """

    def __init__(self, *, env: ServingEnv, pool: WorkerPool, workers: int) -> None:
        self.env = env
        self.pool = pool
        self.workers = workers
        self.max_payload_bytes = env.max_payload_bytes
        self.max_body = env.max_payload_bytes  # a longer body is drained and answered 413
        self._pid = os.getpid()
        self.pid = self._pid
        self._log_lines: list[str] = []
        self._paths: dict[str, str] = {}  # path -> its JSON string in the access log
        # Requests whose body is being read -> when their time is up; swept by one timer.
        self._reading: dict[Exchange, float] = {}
        self._sweeper: asyncio.TimerHandle | None = None
        self._sweep_every = max(
            MIN_BODY_SWEEP_SECONDS, min(BODY_SWEEP_SECONDS, env.body_timeout_seconds / 10)
        )
        self._types: dict[str, bytes] = {}  # content type -> its checked header line
        self._local: dict[str, Callable[[], Reply]] = {
            "/ping": self._ping,
            "/execution-parameters": self._execution_parameters,
        }
        # Stateful sessions and the adapter API (docs/sessions-and-adapters.md).
        self.sessions = Sessions(pool, self, env) if env.stateful_sessions and not env.multi_model else None
        self.adapters = Adapters(pool, self)
        # GET /metrics, answered here like /ping (docs/observability.md); None: SMKIT_METRICS=false.
        self.metrics: Metrics | None = None
        if env.metrics:
            multi = env.multi_model or pool.options.config.get("mode") == "multi"  # or --multi-model DIR
            self.metrics = Metrics(
                self, multi_model=multi, max_models=env.metrics_max_models, path=env.metrics_path
            )
            self._local[env.metrics_path] = self.metrics.scrape
            pool.observer = self.metrics
            for _ in pool.pids():  # launched before the front end was made (smkit/serving/front/launch.py)
                self.metrics.worker_started(restart=False)

    def wants_upgrade(self, request: Request) -> bool:
        """A WebSocket on /invocations-bidirectional-stream (smkit.serving.front.websocket) takes the connection."""
        return request.path == BIDI_PATH and (request.header(b"upgrade") or b"").lower() == b"websocket"

    def upgraded(self, request: Request, transport: asyncio.Transport, rest: bytes) -> None:
        from smkit.serving.front import websocket

        websocket.WebSocketSession(self.pool, self.log_session, request, transport, rest)

    def log_session(
        self, path: str, status: int, started: float, session: WebSocketSession, error: str | None
    ) -> None:
        """The access-log line of a bidirectional-streaming session, when it ends."""
        if not self.env.access_log:
            return
        fields: dict[str, object] = {
            "ts": round(time.time(), 3),
            "method": "GET",
            "path": path,
            "status": status,
            "latency_ms": round((time.perf_counter() - started) * 1000, 3),
            "pid": session.pid,
            "websocket": True,
            "messages_in": session.messages_in,
            "messages_out": session.messages_out,
        }
        if error is not None:
            fields["session_error"] = error
        self._append_log(json.dumps(fields) + "\n")

    # -- calls from the server -----------------------------------------------------------------------
    def waiting(self, exchange: Exchange) -> None:
        """``exchange``'s body did not arrive in one read: cut it off after the body timeout."""
        if exchange not in self._reading:
            loop = asyncio.get_running_loop()
            self._reading[exchange] = loop.time() + self.env.body_timeout_seconds
            if self._sweeper is None:
                self._sweeper = loop.call_later(self._sweep_every, self._sweep)

    def aborted(self, exchange: Exchange) -> None:
        """The client left before its answer was complete: a stream in progress is cancelled."""
        self._reading.pop(exchange, None)
        state = exchange.app
        if exchange.streaming and state is not None:
            state.control.cancel()  # the handler stops at its next item
            self.stream_end(exchange, "the client closed the connection before the end")

    def request(self, exchange: Exchange) -> None:
        """``exchange`` has its whole body and its turn on the connection: answer it."""
        if self._reading:
            self._reading.pop(exchange, None)
        try:
            if exchange.too_large is not None:
                raise PayloadTooLarge(_too_large(exchange.too_large, self.max_payload_bytes))
            local = self._local.get(exchange.path)
            if local is not None:
                if exchange.method != "GET":
                    raise MethodNotAllowed(f"use GET for {exchange.path}")
                self.answer(exchange, local(), self._pid)
                return
            refused = self.pool.accepting()
            if refused is not None:
                raise refused
            if self._contract(exchange):
                return
            self.pool.submit(
                exchange.method, exchange.path, exchange.headers, exchange.chunks, exchange, self
            )
        except Exception as exc:  # noqa: BLE001 - every failure must become a response
            self.answer(exchange, error_reply(exc, debug=self.env.debug), self._pid)

    def _contract(self, exchange: Exchange) -> bool:
        """Sessions and adapters: True when they took the request (docs/sessions-and-adapters.md)."""
        if exchange.path.startswith(ADAPTERS_PATH):
            self.adapters.api(exchange)
            return True
        if self.pool.pinning.any_adapters:
            self.adapters.check(exchange)
        if self.sessions is not None and exchange.path == "/invocations":
            return self.sessions.take(exchange)
        return False

    def answer(self, exchange: Exchange, reply: Reply, pid: int) -> None:
        """Send ``reply`` for ``exchange`` (the pool calls this with the worker's pid)."""
        if exchange.answered:
            return
        close = not exchange.keep_alive
        try:
            head, close = self._head(exchange, reply, close)
        except (ValueError, KeyError) as exc:  # a handler's bad status or header
            reply = error_reply(InferenceError(f"the handler's response cannot be sent: {exc}"), debug=False)
            head, close = self._head(exchange, reply, close)
        exchange.respond_raw(head, reply.body, close=close)
        metrics = self.metrics
        if metrics is not None:
            metrics.record(exchange, reply.status, reply.timings, time.perf_counter() - exchange.started)
        if self.env.access_log and not (exchange.path == "/ping" and OWN_PROBE in exchange.headers):
            self._log(exchange, reply, pid)

    # -- streamed responses (docs/streaming.md) ------------------------------------------------------
    def stream_start(self, exchange: Exchange, reply: Reply, pid: int, control: StreamControl) -> None:
        """A worker streams its answer: send the head (chunked) and the first chunk."""
        if exchange.answered:  # the client is gone
            control.cancel()
            return
        chunked = exchange.chunked  # HTTP/1.0: the close ends the body
        close = not exchange.keep_alive or not chunked
        try:
            head, close = self._head(exchange, reply, close, chunked=chunked)
        except (ValueError, KeyError) as exc:
            control.cancel()
            error = InferenceError(f"the handler's response cannot be sent: {exc}")
            self.answer(exchange, error_reply(error, debug=False), pid)
            return
        state = StreamState(control, reply.status, pid)
        state.timings = reply.timings
        exchange.app = state
        exchange.stream_raw(head, reply.body, close=close, flow=control)  # a full buffer pauses the worker
        if exchange.ended:  # the client is gone
            control.cancel()
            return
        state.first_byte = time.perf_counter()
        state.chunks = 1 if reply.body else 0
        if self.metrics is not None:
            self.metrics.stream_started(exchange, state.first_byte - exchange.started)

    def stream_chunk(self, exchange: Exchange, data: bytes) -> None:
        if data and not exchange.ended:
            exchange.app.chunks += 1
            exchange.write(data)

    def stream_end(self, exchange: Exchange, error: str | None) -> None:
        """The stream is complete, or failed (``error``): the connection closes without the last chunk."""
        state = exchange.app
        if state is None or not exchange.streaming or exchange.ended:
            return
        exchange.finish(error)
        metrics = self.metrics
        if metrics is not None:
            metrics.record(exchange, state.status, state.timings, time.perf_counter() - exchange.started)
            if error is not None:
                metrics.stream_failed(exchange)
        if self.env.access_log:
            self._log_stream(exchange, state, error)

    # -- responses -----------------------------------------------------------------------------------
    def _head(
        self, exchange: Exchange, reply: Reply, close: bool, chunked: bool | None = None
    ) -> tuple[bytes, bool]:
        kind = self._types.get(reply.content_type)
        if kind is None:
            kind = b"content-type: " + header_value(reply.content_type) + b"\r\n"
            if len(self._types) < MAX_CACHED_TYPES:
                self._types[reply.content_type] = kind
        parts = [
            status_line(reply.status),
            exchange.conn.server.date(),
            kind,
            b"content-length: %d\r\n" % len(reply.body)
            if chunked is None
            else (b"transfer-encoding: chunked\r\n" if chunked else b""),
        ]
        for key, value in reply.headers.items():
            name = key.lower()
            if name in FRAMING_HEADERS:
                close = close or (name == "connection" and "close" in str(value).lower())
                continue
            parts += [header_name(key), b": ", header_value(str(value)), b"\r\n"]
        if close:
            parts.append(b"connection: close\r\n")
        parts.append(b"\r\n")
        return b"".join(parts), close

    def _log(self, exchange: Exchange, reply: Reply, pid: int) -> None:
        # Formatted by hand: this runs on every request and json.dumps of a dict costs more than the
        # rest of the line. Only the path can hold characters that need escaping.
        path = self._paths.get(exchange.path)
        if path is None:
            path = json.dumps(exchange.path)
            if len(self._paths) < MAX_CACHED_TYPES:
                self._paths[exchange.path] = path
        loop = asyncio.get_running_loop()
        line = (
            f'{{"ts": {time.time():.3f}, "method": "{exchange.method}", "path": {path}, '
            f'"status": {reply.status}, "latency_ms": {(time.perf_counter() - exchange.started) * 1000:.3f}, '
            f'"request_bytes": {exchange.size}, "response_bytes": {len(reply.body)}, "pid": {pid}}}\n'
        )
        self._log_lines.append(line)
        if len(self._log_lines) == 1:
            loop.call_later(LOG_FLUSH_SECONDS, self.flush_log)

    def _log_stream(self, exchange: Exchange, state: StreamState, error: str | None) -> None:
        now = time.perf_counter()
        fields: dict[str, object] = {
            "ts": round(time.time(), 3),
            "method": exchange.method,
            "path": exchange.path,
            "status": state.status,
            "latency_ms": round((now - exchange.started) * 1000, 3),
            "request_bytes": exchange.size,
            "response_bytes": exchange.sent,
            "pid": state.pid,
            "streamed": True,
            "ttfb_ms": round((state.first_byte - exchange.started) * 1000, 3),
            "chunks": state.chunks,
        }
        if error is not None:
            fields["stream_error"] = error
        self._append_log(json.dumps(fields) + "\n")

    def _append_log(self, line: str) -> None:
        self._log_lines.append(line)
        if len(self._log_lines) == 1:
            asyncio.get_running_loop().call_later(LOG_FLUSH_SECONDS, self.flush_log)

    def flush_log(self) -> None:
        """Write the pending access-log lines to stderr."""
        if not self._log_lines:
            return
        data = "".join(self._log_lines).encode()
        self._log_lines.clear()
        with contextlib.suppress(OSError):
            while data:
                data = data[os.write(2, data) :]

    def _sweep(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        for exchange, deadline in list(self._reading.items()):
            if deadline <= now:
                del self._reading[exchange]
                error = RequestTimeout(
                    f"the request body did not arrive within {self.env.body_timeout_seconds:g} s "
                    "(SMKIT_BODY_TIMEOUT_SECONDS); the connection is closed"
                )
                exchange.keep_alive = False
                self.answer(exchange, error_reply(error, debug=False), self._pid)
        self._sweeper = loop.call_later(self._sweep_every, self._sweep) if self._reading else None

    def _ping(self) -> Reply:
        reason = self.pool.not_ready()
        if reason is not None:
            return error_reply(reason, debug=False)
        return HEALTHY

    def _execution_parameters(self) -> Reply:
        payload = {
            "MaxConcurrentTransforms": self.env.max_concurrent_transforms or self.workers,
            "BatchStrategy": self.env.batch_strategy,
            "MaxPayloadInMB": self.env.max_payload_mb,
        }
        return Reply(200, json.dumps(payload).encode(), JSON)


def _too_large(size: int, limit: int) -> str:
    return (
        f"request body of {size} bytes is over the {limit}-byte payload limit; send a smaller body, use "
        "async inference or batch transform for large inputs, or raise SAGEMAKER_MAX_PAYLOAD_IN_MB"
    )
