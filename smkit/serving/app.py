"""The HTTP adapter: a plain WSGI application for the SageMaker hosting contract (REFERENCE.md §1, §3).

Routes: ``GET /ping``, ``POST /invocations``, ``GET /execution-parameters``; in multi-model mode also
``GET|POST /models``, ``GET|DELETE /models/{name}`` and ``POST /models/{name}/invoke`` (and
``/invocations`` with ``X-Amzn-SageMaker-Target-Model``). The adapter only translates HTTP to the handler
layer and back: payload limit (413), error bodies, one JSON access-log line per request.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote

from smkit.serving import codecs
from smkit.serving.deadline import deadline
from smkit.serving.env import ServingEnv
from smkit.serving.errors import (
    BadRequest,
    MethodNotAllowed,
    ModelNotFound,
    ModelNotReady,
    PayloadTooLarge,
)
from smkit.serving.handler import ModelHandler, Reply, error_reply
from smkit.serving.multimodel import ModelCache

StartResponse = Callable[[str, list[tuple[str, str]]], Any]
STATUS_LINES = {s.value: f"{s.value} {s.phrase}" for s in HTTPStatus}
TARGET_MODEL = "HTTP_X_AMZN_SAGEMAKER_TARGET_MODEL"
# An oversize body is read and dropped up to this many extra bytes so the client gets its 413 instead
# of a broken pipe; beyond that the connection is closed unread.
DRAIN_LIMIT = 64 * 1024 * 1024


class EnvironHeaders(Mapping[str, str]):
    """Request headers read lazily from a WSGI environ (case-insensitive)."""

    __slots__ = ("_environ",)

    def __init__(self, environ: Mapping[str, Any]) -> None:
        self._environ = environ

    @staticmethod
    def _key(name: str) -> str:
        key = name.upper().replace("-", "_")
        return key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else "HTTP_" + key

    def __getitem__(self, name: str) -> str:
        value = self._environ.get(self._key(name))
        if value is None:
            raise KeyError(name)
        return str(value)

    def get(self, name: str, default: Any = None) -> Any:  # fast path used on every request
        return self._environ.get(self._key(name), default)

    def __iter__(self) -> Iterator[str]:
        for key in self._environ:
            if key.startswith("HTTP_"):
                yield key[5:].replace("_", "-").title()
            elif key in ("CONTENT_TYPE", "CONTENT_LENGTH") and self._environ[key]:
                yield key.replace("_", "-").title()

    def __len__(self) -> int:
        return sum(1 for _ in self)


@dataclass
class SingleModel:
    """Single-model state: the handler once loaded, or the load error."""

    handler: ModelHandler | None = None
    error: str | None = None
    loading: bool = True


class ServingApp:
    """The WSGI callable.

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
        self._routes: dict[tuple[str, str], Callable[[dict[str, Any]], Reply]] = {
            ("GET", "/ping"): self._ping,
            ("POST", "/invocations"): self._invocations,
            ("GET", "/execution-parameters"): self._execution_parameters,
        }
        if cache is not None:
            self._routes[("GET", "/models")] = self._list_models
            self._routes[("POST", "/models")] = self._load_model

    # -- WSGI ----------------------------------------------------------------------------------------
    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        started = time.perf_counter()
        method = environ["REQUEST_METHOD"]
        path = environ.get("PATH_INFO") or "/"
        try:
            route = self._routes.get((method, path))
            reply = route(environ) if route is not None else self._dynamic(method, path, environ)
        except Exception as exc:  # noqa: BLE001 - every failure must become a response
            reply = error_reply(exc, debug=self.env.debug)
        headers = [("Content-Type", reply.content_type), ("Content-Length", str(len(reply.body)))]
        if reply.headers:
            headers.extend(reply.headers.items())
        status = STATUS_LINES.get(reply.status) or f"{reply.status} Status"
        start_response(status, headers)
        if self.env.access_log:
            self._log(environ, method, path, reply, started)
        return [reply.body]

    def _log(self, environ: dict[str, Any], method: str, path: str, reply: Reply, started: float) -> None:
        record = {
            "ts": round(time.time(), 3),
            "method": method,
            "path": path,
            "status": reply.status,
            "latency_ms": round((time.perf_counter() - started) * 1000, 3),
            "request_bytes": int(environ.get("CONTENT_LENGTH") or 0),
            "response_bytes": len(reply.body),
            "pid": self._pid,
        }
        with contextlib.suppress(OSError):
            os.write(2, (json.dumps(record) + "\n").encode())

    def _dynamic(self, method: str, path: str, environ: dict[str, Any]) -> Reply:
        if self.cache is not None and path.startswith("/models/"):
            rest = path[len("/models/") :]
            if rest.endswith("/invoke"):
                name = unquote(rest[: -len("/invoke")])
                if method != "POST":
                    raise MethodNotAllowed(f"use POST for /models/{name}/invoke")
                return self._invoke_model(name, environ)
            name = unquote(rest)
            if method == "GET":
                return _json(200, _describe(self.cache.describe(name)))
            if method == "DELETE":
                self.cache.unload(name)
                return _json(200, {"status": f"Model {name!r} unloaded"})
            raise MethodNotAllowed(f"use GET or DELETE for /models/{name}")
        if any(route_path == path for _, route_path in self._routes):
            allowed = sorted(m for m, p in self._routes if p == path)
            raise MethodNotAllowed(f"use {' or '.join(allowed)} for {path}")
        raise ModelNotFound(f"no such path {path!r}") if path.startswith("/models") else _not_found(path)

    # -- body ----------------------------------------------------------------------------------------
    def _body(self, environ: dict[str, Any]) -> bytes:
        limit = self.env.max_payload_bytes
        length_text = environ.get("CONTENT_LENGTH")
        stream = environ["wsgi.input"]
        if length_text:
            try:
                length = int(length_text)
            except ValueError:
                raise BadRequest(f"Content-Length {length_text!r} is not a number") from None
            if length > limit:
                _drain(stream, min(length, limit + DRAIN_LIMIT))
                raise PayloadTooLarge(_too_large(length, limit))
            return stream.read(length) if length else b""
        body = stream.read(limit + 1)
        if len(body) > limit:
            raise PayloadTooLarge(_too_large(len(body), limit))
        return body

    # -- single model --------------------------------------------------------------------------------
    def _ping(self, environ: dict[str, Any]) -> Reply:
        if self.single is None or self.single.handler is not None:
            return Reply(200, b'{"status": "Healthy"}\n', codecs.JSON)
        return error_reply(self._not_ready(), debug=False)

    def _not_ready(self) -> ModelNotReady:
        assert self.single is not None
        if self.single.error is not None:
            return ModelNotReady(f"the model failed to load: {self.single.error}")
        return ModelNotReady("the model is still loading")

    def _invocations(self, environ: dict[str, Any]) -> Reply:
        if self.cache is not None:
            target = environ.get(TARGET_MODEL)
            if not target:
                raise BadRequest(
                    "multi-model mode: set the X-Amzn-SageMaker-Target-Model header "
                    "or POST /models/{name}/invoke"
                )
            return self._invoke_model(target, environ)
        assert self.single is not None
        handler = self.single.handler
        if handler is None:
            raise self._not_ready()
        body = self._body(environ)
        with deadline(self.env.timeout_seconds):
            return handler.invoke(body, EnvironHeaders(environ))

    def _execution_parameters(self, environ: dict[str, Any]) -> Reply:
        return _json(
            200,
            {
                "MaxConcurrentTransforms": self.env.max_concurrent_transforms or self.workers,
                "BatchStrategy": self.env.batch_strategy,
                "MaxPayloadInMB": self.env.max_payload_mb,
            },
        )

    # -- multi model ---------------------------------------------------------------------------------
    def _list_models(self, environ: dict[str, Any]) -> Reply:
        assert self.cache is not None
        models = [{"modelName": e.name, "modelUrl": e.url} for e in self.cache.entries()]
        return _json(200, {"models": models, "nextPageToken": None})

    def _load_model(self, environ: dict[str, Any]) -> Reply:
        assert self.cache is not None
        try:
            request = json.loads(self._body(environ) or b"null")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise BadRequest(f'POST /models body is not JSON: {exc}; send {{"model_name", "url"}}') from None
        if not isinstance(request, dict) or not isinstance(request.get("url"), str):
            raise BadRequest('POST /models needs a JSON object {"model_name": "...", "url": "..."}')
        name = request.get("model_name")
        if not isinstance(name, str) or not name:
            raise BadRequest('POST /models: "model_name" must be a non-empty string')
        self.cache.load(name, request["url"])
        return _json(200, {"status": f"Model {name!r} loaded"})

    def _invoke_model(self, name: str, environ: dict[str, Any]) -> Reply:
        assert self.cache is not None
        body = self._body(environ)
        return self.cache.invoke(name, body, EnvironHeaders(environ))


def _drain(stream: Any, size: int) -> None:
    while size > 0:
        chunk = stream.read(min(size, 1 << 20))
        if not chunk:
            return
        size -= len(chunk)


def _describe(entry: Any) -> list[dict[str, Any]]:
    return [{"modelName": entry.name, "modelUrl": entry.url, "footprintBytes": entry.footprint}]


def _json(status: int, payload: Any) -> Reply:
    return Reply(status, json.dumps(payload).encode(), codecs.JSON)


def _too_large(size: int, limit: int) -> str:
    return (
        f"request body of {size} bytes is over the {limit}-byte payload limit; send a smaller body, use "
        "async inference or batch transform for large inputs, or raise SAGEMAKER_MAX_PAYLOAD_IN_MB"
    )


def _not_found(path: str) -> Exception:
    from smkit.serving.errors import InferenceError

    return InferenceError(
        f"no such path {path!r}; use /ping, /invocations or /execution-parameters", status_code=404
    )
