"""The front end's ASGI application: HTTP in, whole requests to the worker pool, replies out.

The front end never runs a model hook. It answers ``GET /ping`` and ``GET /execution-parameters``
itself, so a busy or stuck handler can never delay a health check (SageMaker marks an instance
unhealthy when ``/ping`` does not answer within 2 s: docs/hosting-contract.md,
https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-inference-code.html). Every other request
is read in full here, within ``SMKIT_BODY_TIMEOUT_SECONDS`` (a stalled upload never holds a worker) and
the payload limit (413), then queued for the first free worker (:mod:`smkit.serving.pool`). One JSON
access-log line per request, with the pid of the worker that answered (written in batches every 50 ms).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from smkit.serving import codecs
from smkit.serving.env import ServingEnv
from smkit.serving.errors import BadRequest, InferenceError, MethodNotAllowed, PayloadTooLarge
from smkit.serving.handler import Reply, error_reply
from smkit.serving.pool import WorkerPool

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
# An oversize body is read and dropped up to this many extra bytes so the client gets its 413 instead
# of a broken pipe; beyond that the connection is closed unread.
DRAIN_LIMIT = 64 * 1024 * 1024
HEALTHY = Reply(200, b'{"status": "Healthy"}\n', codecs.JSON)
# Access-log lines are written together at most this often: one write per batch, not per request.
LOG_FLUSH_SECONDS = 0.05
# Body reads past SMKIT_BODY_TIMEOUT_SECONDS are looked for this often (a tenth of the limit when that
# is shorter, never more often than every 10 ms): one timer for all requests instead of one per request.
BODY_SWEEP_SECONDS = 1.0
MIN_BODY_SWEEP_SECONDS = 0.01


class RequestTimeout(InferenceError):
    """The request body did not arrive within ``SMKIT_BODY_TIMEOUT_SECONDS`` (408)."""

    status_code = 408
    error_type = "RequestTimeout"


class FrontEnd:
    """The ASGI callable.

    Args:
        env: the serving environment.
        pool: the model workers.
        workers: worker count, reported by ``/execution-parameters``.
    """

    def __init__(self, *, env: ServingEnv, pool: WorkerPool, workers: int) -> None:
        self.env = env
        self.pool = pool
        self.workers = workers
        self._pid = os.getpid()
        self._log_lines: list[str] = []
        # Requests whose body is being read -> when their time is up; swept by one timer.
        self._reading: dict[asyncio.Task[Any], float] = {}
        self._expired: set[asyncio.Task[Any]] = set()
        self._sweeper: asyncio.TimerHandle | None = None
        self._sweep_every = max(
            MIN_BODY_SWEEP_SECONDS, min(BODY_SWEEP_SECONDS, env.body_timeout_seconds / 10)
        )
        self._local: dict[str, Callable[[], Reply]] = {
            "/ping": self._ping,
            "/execution-parameters": self._execution_parameters,
        }

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        started = time.perf_counter()
        method = scope["method"]
        path = scope["path"] or "/"
        size = 0
        pid = self._pid
        try:
            local = self._local.get(path)
            if local is not None:
                if method != "GET":
                    raise MethodNotAllowed(f"use GET for {path}")
                reply = local()
            else:
                raw = scope["headers"]
                body = await self._read_body_in_time(raw, receive)
                size = len(body)
                refused = self.pool.accepting()
                if refused is not None:
                    raise refused
                reply, pid = await self.pool.submit(method, path, raw, body)
        except TimeoutError:
            reply = error_reply(
                RequestTimeout(
                    f"the request body did not arrive within {self.env.body_timeout_seconds:g} s "
                    "(SMKIT_BODY_TIMEOUT_SECONDS); the connection is closed"
                ),
                debug=False,
            )
            reply.headers["connection"] = "close"
        except Exception as exc:  # noqa: BLE001 - every failure must become a response
            reply = error_reply(exc, debug=self.env.debug)
        raw_headers = [
            (b"content-type", reply.content_type.encode("latin-1")),
            (b"content-length", str(len(reply.body)).encode()),
        ]
        for key, value in reply.headers.items():
            raw_headers.append((key.encode("latin-1"), str(value).encode("latin-1")))
        await send({"type": "http.response.start", "status": reply.status, "headers": raw_headers})
        await send({"type": "http.response.body", "body": reply.body})
        if self.env.access_log:
            self._log(method, path, reply, size, started, pid)

    def _log(self, method: str, path: str, reply: Reply, size: int, started: float, pid: int) -> None:
        # Formatted by hand: this runs on every request and json.dumps of a dict costs more than the
        # rest of the line. Only the path can hold characters that need escaping.
        line = (
            f'{{"ts": {time.time():.3f}, "method": "{method}", "path": {json.dumps(path)}, '
            f'"status": {reply.status}, "latency_ms": {(time.perf_counter() - started) * 1000:.3f}, '
            f'"request_bytes": {size}, "response_bytes": {len(reply.body)}, "pid": {pid}}}\n'
        )
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

    async def _read_body_in_time(self, raw: list[tuple[bytes, bytes]], receive: Receive) -> bytes:
        """The body, or TimeoutError after ``SMKIT_BODY_TIMEOUT_SECONDS`` (checked by :meth:`_sweep`)."""
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        self._reading[task] = loop.time() + self.env.body_timeout_seconds
        if self._sweeper is None:
            self._sweeper = loop.call_later(self._sweep_every, self._sweep)
        try:
            return await self._read_body(raw, receive)
        except asyncio.CancelledError:
            if task not in self._expired:
                raise
            task.uncancel()
            raise TimeoutError from None
        finally:
            self._reading.pop(task, None)
            self._expired.discard(task)

    def _sweep(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        for task, deadline in list(self._reading.items()):
            if deadline <= now and task not in self._expired:
                self._expired.add(task)
                task.cancel()
        self._sweeper = loop.call_later(self._sweep_every, self._sweep) if self._reading else None

    async def _read_body(self, raw: list[tuple[bytes, bytes]], receive: Receive) -> bytes:
        limit = self.env.max_payload_bytes
        length_text = next((value for name, value in raw if name == b"content-length"), None)
        if length_text:
            try:
                length = int(length_text)
            except ValueError:
                raise BadRequest(f"Content-Length {length_text!r} is not a number") from None
            if length > limit:
                await _drain(receive, min(length, limit + DRAIN_LIMIT))
                raise PayloadTooLarge(_too_large(length, limit))
        message = await receive()
        body = message.get("body", b"")
        if not message.get("more_body"):
            return body
        chunks = [body]
        size = len(body)
        while message.get("more_body"):
            message = await receive()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _drain(receive, DRAIN_LIMIT)
                raise PayloadTooLarge(_too_large(size, limit))
            chunks.append(chunk)
        return b"".join(chunks)

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
        return Reply(200, json.dumps(payload).encode(), codecs.JSON)


async def _drain(receive: Receive, size: int) -> None:
    while size > 0:
        message = await receive()
        if message.get("type") != "http.request":
            return
        size -= len(message.get("body", b""))
        if not message.get("more_body"):
            return


def _too_large(size: int, limit: int) -> str:
    return (
        f"request body of {size} bytes is over the {limit}-byte payload limit; send a smaller body, use "
        "async inference or batch transform for large inputs, or raise SAGEMAKER_MAX_PAYLOAD_IN_MB"
    )
