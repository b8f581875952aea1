"""The HTTP adapter: a plain ASGI application for the SageMaker hosting contract.

Contract: docs/hosting-contract.md and docs/multi-model.md.

Routes: ``GET /ping``, ``POST /invocations``, ``GET /execution-parameters``; in multi-model mode also
``GET|POST /models``, ``GET|DELETE /models/{name}`` and ``POST /models/{name}/invoke`` (and
``/invocations`` with ``X-Amzn-SageMaker-Target-Model``). The adapter only translates HTTP to the handler
layer and back: payload limit (413), error bodies, one JSON access-log line per request.

Handlers run synchronously on the worker's event-loop thread: a worker serves one request at a time
(like the toolkit's model workers), keeps client connections alive, and the invocation time limit can
interrupt a handler with SIGALRM (:mod:`smkit.serving.deadline`).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from smkit.serving import codecs
from smkit.serving.context import Headers
from smkit.serving.deadline import deadline
from smkit.serving.env import ServingEnv
from smkit.serving.errors import (
    BadRequest,
    InferenceError,
    MethodNotAllowed,
    ModelNotFound,
    ModelNotReady,
    PayloadTooLarge,
)
from smkit.serving.handler import ModelHandler, Reply, error_reply
from smkit.serving.multimodel import ModelCache

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
TARGET_MODEL = "x-amzn-sagemaker-target-model"
# An oversize body is read and dropped up to this many extra bytes so the client gets its 413 instead
# of a broken pipe; beyond that the connection is closed unread.
DRAIN_LIMIT = 64 * 1024 * 1024


@dataclass
class Request:
    """One HTTP request as the routes see it."""

    method: str
    path: str
    headers: Headers
    body: bytes


@dataclass
class SingleModel:
    """Single-model state: the handler once loaded, or the load error."""

    handler: ModelHandler | None = None
    error: str | None = None


class ServingApp:
    """The ASGI callable.

    Args:
        env: the serving environment.
        single: single-model state (None in multi-model mode).
        cache: multi-model cache (None in single-model mode).
        workers: worker count, reported by ``/execution-parameters``.
    """

    def __init__(
        self,
        *,
        env: ServingEnv,
        single: SingleModel | None = None,
        cache: ModelCache | None = None,
        workers: int = 1,
    ) -> None:
        self.env = env
        self.single = single
        self.cache = cache
        self.workers = workers
        self._pid = os.getpid()
        self._workers_ready: Callable[[], bool] | None = None
        self._routes: dict[tuple[str, str], Callable[[Request], Reply]] = {
            ("GET", "/ping"): self._ping,
            ("POST", "/invocations"): self._invocations,
            ("GET", "/execution-parameters"): self._execution_parameters,
        }
        if cache is not None:
            self._routes[("GET", "/models")] = self._list_models
            self._routes[("POST", "/models")] = self._load_model

    def set_pid(self, pid: int) -> None:
        """Record the worker's pid for the access log (called after fork)."""
        self._pid = pid

    def set_workers_ready(self, check: Callable[[], bool]) -> None:
        """``/ping`` answers 503 until ``check()`` is true once (every worker of the server listens)."""
        self._workers_ready = check

    # -- ASGI ----------------------------------------------------------------------------------------
    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await _lifespan(receive, send)
            return
        started = time.perf_counter()
        method = scope["method"]
        path = scope["path"] or "/"
        headers = Headers.from_raw(scope["headers"])
        size = 0
        try:
            body = await self._read_body(headers, receive)
            size = len(body)
            request = Request(method, path, headers, body)
            route = self._routes.get((method, path))
            reply = route(request) if route is not None else self._dynamic(request)
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
            self._log(method, path, reply, size, started)

    def _log(self, method: str, path: str, reply: Reply, size: int, started: float) -> None:
        # Formatted by hand: this runs on every request and json.dumps of a dict costs more than the
        # rest of the adapter. Only the path can hold characters that need escaping.
        line = (
            f'{{"ts": {time.time():.3f}, "method": "{method}", "path": {json.dumps(path)}, '
            f'"status": {reply.status}, "latency_ms": {(time.perf_counter() - started) * 1000:.3f}, '
            f'"request_bytes": {size}, "response_bytes": {len(reply.body)}, "pid": {self._pid}}}\n'
        )
        with contextlib.suppress(OSError):
            os.write(2, line.encode())

    async def _read_body(self, headers: Headers, receive: Receive) -> bytes:
        limit = self.env.max_payload_bytes
        length_text = headers.get("content-length")
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

    def _dynamic(self, request: Request) -> Reply:
        method, path = request.method, request.path
        if self.cache is not None and path.startswith("/models/"):
            rest = path[len("/models/") :]
            if rest.endswith("/invoke"):
                name = rest[: -len("/invoke")]  # ASGI paths arrive percent-decoded
                if method != "POST":
                    raise MethodNotAllowed(f"use POST for /models/{name}/invoke")
                return self._invoke_model(name, request)
            name = rest
            if method == "GET":
                return _json(200, _describe(self.cache.describe(name)))
            if method == "DELETE":
                self.cache.unload(name)
                return _json(200, {"status": f"Model {name!r} unloaded"})
            raise MethodNotAllowed(f"use GET or DELETE for /models/{name}")
        allowed = sorted(m for m, p in self._routes if p == path)
        if allowed:
            raise MethodNotAllowed(f"use {' or '.join(allowed)} for {path}")
        if path.startswith("/models"):
            raise ModelNotFound(f"no such path {path!r}")
        raise InferenceError(
            f"no such path {path!r}; use /ping, /invocations or /execution-parameters", status_code=404
        )

    # -- single model --------------------------------------------------------------------------------
    def _ping(self, request: Request) -> Reply:
        if self.single is not None and self.single.handler is None:
            return error_reply(self._not_ready(), debug=False)
        if self._workers_ready is not None:
            if not self._workers_ready():
                return error_reply(ModelNotReady("the server's workers are still starting"), debug=False)
            self._workers_ready = None  # a latch: a worker replaced later does not fail health checks
        return Reply(200, b'{"status": "Healthy"}\n', codecs.JSON)

    def _not_ready(self) -> ModelNotReady:
        assert self.single is not None
        if self.single.error is not None:
            return ModelNotReady(f"the model failed to load: {self.single.error}")
        return ModelNotReady("the model is still loading")

    def _invocations(self, request: Request) -> Reply:
        if self.cache is not None:
            target = request.headers.get(TARGET_MODEL)
            if not target:
                raise BadRequest(
                    "multi-model mode: set the X-Amzn-SageMaker-Target-Model header "
                    "or POST /models/{name}/invoke"
                )
            return self._invoke_model(target, request)
        assert self.single is not None
        handler = self.single.handler
        if handler is None:
            raise self._not_ready()
        with deadline(self.env.timeout_seconds):
            return handler.invoke(request.body, request.headers)

    def _execution_parameters(self, request: Request) -> Reply:
        return _json(
            200,
            {
                "MaxConcurrentTransforms": self.env.max_concurrent_transforms or self.workers,
                "BatchStrategy": self.env.batch_strategy,
                "MaxPayloadInMB": self.env.max_payload_mb,
            },
        )

    # -- multi model ---------------------------------------------------------------------------------
    def _list_models(self, request: Request) -> Reply:
        assert self.cache is not None
        models = [{"modelName": e.name, "modelUrl": e.url} for e in self.cache.entries()]
        return _json(200, {"models": models, "nextPageToken": None})

    def _load_model(self, request: Request) -> Reply:
        assert self.cache is not None
        try:
            payload = json.loads(request.body or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise BadRequest(f'POST /models body is not JSON: {exc}; send {{"model_name", "url"}}') from None
        if not isinstance(payload, dict) or not isinstance(payload.get("url"), str):
            raise BadRequest('POST /models needs a JSON object {"model_name": "...", "url": "..."}')
        name = payload.get("model_name")
        if not isinstance(name, str) or not name:
            raise BadRequest('POST /models: "model_name" must be a non-empty string')
        self.cache.load(name, payload["url"])
        return _json(200, {"status": f"Model {name!r} loaded"})

    def _invoke_model(self, name: str, request: Request) -> Reply:
        assert self.cache is not None
        return self.cache.invoke(name, request.body, request.headers)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def _drain(receive: Receive, size: int) -> None:
    while size > 0:
        message = await receive()
        if message.get("type") != "http.request":
            return
        size -= len(message.get("body", b""))
        if not message.get("more_body"):
            return


def _describe(entry: Any) -> list[dict[str, Any]]:
    return [{"modelName": entry.name, "modelUrl": entry.url, "footprintBytes": entry.footprint}]


def _json(status: int, payload: Any) -> Reply:
    return Reply(status, json.dumps(payload).encode(), codecs.JSON)


def _too_large(size: int, limit: int) -> str:
    return (
        f"request body of {size} bytes is over the {limit}-byte payload limit; send a smaller body, use "
        "async inference or batch transform for large inputs, or raise SAGEMAKER_MAX_PAYLOAD_IN_MB"
    )
