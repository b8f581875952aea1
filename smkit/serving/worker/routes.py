"""The request routes a model worker runs: ``/invocations`` and the multi-model API (synchronous).

The front end (:mod:`smkit.serving.front.frontend`) answers ``/ping`` and ``/execution-parameters`` itself and
hands every other request to a worker, which calls :meth:`WorkerRoutes.dispatch` with the whole body. Routes:
``POST /invocations``; in multi-model mode also ``GET|POST /models``, ``GET|DELETE /models/{name}`` and
``POST /models/{name}/invoke`` (and ``/invocations`` with ``X-Amzn-SageMaker-Target-Model``), as
docs/multi-model.md describes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from smkit import contract
from smkit.hosting.env import ServingEnv
from smkit.serving.wire.errors import BadRequest, InferenceError, MethodNotAllowed, ModelNotFound
from smkit.serving.wire.messages import ADAPTER_LOAD, ADAPTER_UNLOAD, INTERNAL, SESSION_CLOSE, SESSION_START
from smkit.serving.wire.reply import Reply, error_reply
from smkit.serving.worker import codecs
from smkit.serving.worker.context import RequestHeaders
from smkit.serving.worker.deadline import deadline
from smkit.serving.worker.handler import ModelHandler

if TYPE_CHECKING:
    from smkit.serving.worker.multimodel import ModelCache

TARGET_MODEL = contract.TARGET_MODEL.lower()


@dataclass
class WorkerRequest:
    """One HTTP request as the routes see it."""

    method: str
    path: str
    headers: RequestHeaders
    body: bytes


class WorkerRoutes:
    """Routes for one worker: a loaded single-model ``handler`` or a multi-model ``cache``."""

    def __init__(
        self, *, env: ServingEnv, handler: ModelHandler | None = None, cache: ModelCache | None = None
    ) -> None:
        self.env = env
        self.handler = handler
        self.cache = cache
        self._routes: dict[tuple[str, str], Callable[[WorkerRequest], Reply]] = {
            ("POST", "/invocations"): self._invocations,
        }
        if handler is not None:
            self._routes[(INTERNAL, SESSION_START)] = self._session_start
            self._routes[(INTERNAL, SESSION_CLOSE)] = self._session_close
            self._routes[(INTERNAL, ADAPTER_LOAD)] = self._adapter_load
            self._routes[(INTERNAL, ADAPTER_UNLOAD)] = self._adapter_unload
        if cache is not None:
            self._routes[("GET", "/models")] = self._list_models
            self._routes[("POST", "/models")] = self._load_model

    def dispatch(self, request: WorkerRequest) -> Reply:
        """The reply for ``request``; every failure becomes an error reply."""
        try:
            route = self._routes.get((request.method, request.path))
            return route(request) if route is not None else self._dynamic(request)
        except Exception as exc:  # noqa: BLE001 - every failure must become a response
            return error_reply(exc, debug=self.env.debug)

    def batch_key(self, method: str, path: str, headers: RequestHeaders) -> str | None:
        """The model an invocation may share a batch for ("" : the single model); None: it runs alone.

        Only invocations are batched, and only by a handler with ``predict_batch_fn`` (in multi-model mode
        every model has one, or its load is refused: docs/handler-semantics.md); in multi-model mode only
        requests for the same model share a batch.
        """
        if method != "POST":
            return None
        if self.cache is None:
            batchable = path == "/invocations" and self.handler is not None and self.handler.batchable
            return "" if batchable else None
        if path == "/invocations":
            return headers.get(TARGET_MODEL) or None
        if path.startswith("/models/") and path.endswith("/invoke"):
            return path[len("/models/") : -len("/invoke")] or None
        return None

    def dispatch_batch(self, key: str, requests: list[WorkerRequest]) -> list[Reply]:
        """One reply per request of a batch :meth:`batch_key` gave ``key``; a failure answers them all."""
        try:
            pairs = [(r.body, r.headers) for r in requests]
            if self.cache is not None:
                return self.cache.invoke_batch(key, pairs)
            assert self.handler is not None
            with deadline(self.env.timeout_seconds):
                return self.handler.invoke_batch(pairs)
        except Exception as exc:  # noqa: BLE001 - every failure must become a response
            return [error_reply(exc, debug=self.env.debug)] * len(requests)

    def _dynamic(self, request: WorkerRequest) -> Reply:
        method, path = request.method, request.path
        if self.cache is not None and path.startswith("/models/"):
            rest = path[len("/models/") :]
            if rest.endswith("/invoke"):
                name = rest[: -len("/invoke")]  # ASGI paths arrive percent-decoded
                if method != "POST":
                    raise MethodNotAllowed(f"use POST for /models/{name}/invoke")
                return self.cache.invoke(name, request.body, request.headers)
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

    def _invocations(self, request: WorkerRequest) -> Reply:
        if self.cache is not None:
            target = request.headers.get(TARGET_MODEL)
            if not target:
                raise BadRequest(
                    "multi-model mode: set the X-Amzn-SageMaker-Target-Model header "
                    "or POST /models/{name}/invoke"
                )
            return self.cache.invoke(target, request.body, request.headers)
        assert self.handler is not None
        with deadline(self.env.timeout_seconds):
            return self.handler.invoke(request.body, request.headers)

    # -- sessions and adapters (the front end decided; the handler's hooks run here) ---------------------
    def _contract(self, request: WorkerRequest, hook: str, *fields: str) -> Reply:
        assert self.handler is not None
        payload = json.loads(request.body)
        with deadline(self.env.timeout_seconds):
            self.handler.call_contract_hook(
                hook, *(payload[name] for name in fields), session_dir=payload.get("session_dir")
            )
        return _json(200, {})

    def _session_start(self, request: WorkerRequest) -> Reply:
        return self._contract(request, "session_start_fn", "session_id")

    def _session_close(self, request: WorkerRequest) -> Reply:
        return self._contract(request, "session_close_fn", "session_id")

    def _adapter_load(self, request: WorkerRequest) -> Reply:
        return self._contract(request, "load_adapter_fn", "name", "src")

    def _adapter_unload(self, request: WorkerRequest) -> Reply:
        return self._contract(request, "unload_adapter_fn", "name")

    def _list_models(self, request: WorkerRequest) -> Reply:
        assert self.cache is not None
        models = [{"modelName": e.name, "modelUrl": e.url} for e in self.cache.entries()]
        return _json(200, {"models": models, "nextPageToken": None})

    def _load_model(self, request: WorkerRequest) -> Reply:
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


def _describe(entry: Any) -> list[dict[str, Any]]:
    return [{"modelName": entry.name, "modelUrl": entry.url, "footprintBytes": entry.footprint}]


def _json(status: int, payload: Any) -> Reply:
    return Reply(status, json.dumps(payload).encode(), codecs.JSON)
