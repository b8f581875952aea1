"""The LoRA adapter API of the container, in the front end: register, unregister, select per request.

As AWS's reference implementation (``model-hosting-container-standards``,
docs/sagemaker/05_lora_adapter_management.md; docs/sessions-and-adapters.md here):

- ``POST /adapters`` with ``{"name": "...", "src": "...", "preload": true, "pin": false}``: 200
  ``Adapter <name> registered`` (``<alias>`` when ``X-Amzn-SageMaker-Adapter-Alias`` is set); a missing
  or empty ``name``/``src`` is 400;
- ``DELETE /adapters/{name}``: 200 ``Adapter <name> unregistered``; an unknown name is 404
  ``The adapter <name> was not found``;
- ``X-Amzn-SageMaker-Adapter-Identifier: <name>`` on a request selects the adapter: the handler sees it
  as ``context.adapter_id``; an unknown name is 404 ``The adapter <name> was not found``.

Each worker holds its own copy of the model, so a registration runs the handler's ``load_adapter_fn``
in every worker (:mod:`smkit.serving.front.pinning`) and succeeds only when it succeeds in all of them (the
ones that loaded it unload it again otherwise). Workers started later (a replacement) load every
registered adapter before they report ready. The API exists when the handler defines
``load_adapter_fn``; otherwise ``/adapters`` is 404, as on a container without adapter handlers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from smkit import contract
from smkit.serving.front.exchange import Exchange
from smkit.serving.front.relay import WholeReply
from smkit.serving.wire import messages
from smkit.serving.wire.errors import BadRequest, InferenceError, MethodNotAllowed
from smkit.serving.wire.reply import Reply, error_reply

if TYPE_CHECKING:
    from smkit.serving.front.pool import WorkerPool
    from smkit.serving.front.relay import Client

PREFIX = "/adapters"
ADAPTER_HEADER = contract.ADAPTER_IDENTIFIER.lower().encode()
ALIAS_HEADER = contract.ADAPTER_ALIAS.lower().encode()
TEXT = "text/plain; charset=utf-8"
CONFIG_KEY = "adapters"  # the worker configuration's {name: src} of adapters to load at start


class AdapterNotFound(InferenceError, status=404):
    """No adapter of that name is registered (404)."""


class AdapterExists(InferenceError, status=409):
    """An adapter of that name is registered already (409)."""


def not_found(name: str) -> AdapterNotFound:
    return AdapterNotFound(f"The adapter {name} was not found")


def parse_register(body: bytes) -> tuple[str, str]:
    """``(name, src)`` of a ``POST /adapters`` body; BadRequest naming the field otherwise."""
    try:
        payload = json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(
            f'POST /adapters body is not JSON ({exc}); send {{"name": "...", "src": "..."}}'
        ) from None
    if not isinstance(payload, dict):
        raise BadRequest('POST /adapters needs a JSON object {"name": "...", "src": "..."}')
    for key in ("name", "src"):
        value = payload.get(key)
        if not isinstance(value, str) or not value:
            raise BadRequest(
                f"POST /adapters: {key!r} is {value!r}; the parameter {key} must be a non-empty string"
            )
    for key in ("preload", "pin"):
        if key in payload and not isinstance(payload[key], bool):
            raise BadRequest(f"POST /adapters: {key!r} is {payload[key]!r}; use true or false")
    return payload["name"], payload["src"]


class _Gather(WholeReply):
    """Collects the replies of one job per worker, then calls ``done`` with them (slot -> reply)."""

    def __init__(self, slots: list[int], done: Callable[[dict[int, Reply]], None]) -> None:
        self.waiting = set(slots)
        self.replies: dict[int, Reply] = {}
        self.done = done

    def answer(self, token: Any, reply: Reply, pid: int) -> None:
        self.replies[token] = reply
        self.waiting.discard(token)
        if not self.waiting:
            self.done(self.replies)


class Adapters:
    """The registered adapters of one front end."""

    def __init__(self, pool: WorkerPool, client: Client) -> None:
        self.pool = pool
        self.client = client
        self.names: dict[str, str] = {}  # name -> src
        self.pool.pinning.config[CONFIG_KEY] = self.names

    @property
    def serving(self) -> bool:
        """A ready worker's handler defines ``load_adapter_fn``."""
        return bool(self.pool.pinning.ready_slots(messages.FEATURE_ADAPTERS))

    def check(self, exchange: Exchange) -> None:
        """404 when the request selects an adapter that is not registered."""
        name = exchange.header_text(ADAPTER_HEADER)
        if name and name not in self.names:
            raise not_found(name)

    def api(self, exchange: Exchange) -> None:
        """``POST /adapters`` and ``DELETE /adapters/{name}``."""
        slots = self.pool.pinning.ready_slots(messages.FEATURE_ADAPTERS)
        if not slots:
            raise InferenceError(
                f"no such path {exchange.path!r}: this model serves no adapter API; define "
                "load_adapter_fn(model, name, src) in code/inference.py",
                status_code=404,
            )
        if exchange.path == PREFIX:
            if exchange.method != "POST":
                raise MethodNotAllowed("use POST /adapters to register an adapter")
            self._register(exchange, slots)
            return
        name = unquote(exchange.path[len(PREFIX) + 1 :]) if exchange.path.startswith(PREFIX + "/") else ""
        if not name or "/" in name:
            raise InferenceError(
                f"no such path {exchange.path!r}; use DELETE /adapters/{{name}}", status_code=404
            )
        if exchange.method != "DELETE":
            raise MethodNotAllowed(f"use DELETE /adapters/{name} to unregister an adapter")
        self._unregister(exchange, name, slots)

    def _register(self, exchange: Exchange, slots: list[int]) -> None:
        name, src = parse_register(b"".join(exchange.chunks))
        if name in self.names:
            raise AdapterExists(
                f"The adapter {name} already exists. If you want to replace it, please unregister before "
                "registering a new adapter with the same name."
            )
        shown = exchange.header_text(ALIAS_HEADER) or name

        def done(replies: dict[int, Reply]) -> None:
            failed = [reply for reply in replies.values() if reply.status != 200]
            if failed:
                loaded = [slot for slot, reply in replies.items() if reply.status == 200]
                if loaded:
                    self._broadcast(messages.ADAPTER_UNLOAD, {"name": name}, loaded, lambda _: None)
                self.client.answer(exchange, failed[0], self.client.pid)
                return
            self.names[name] = src
            self.client.answer(
                exchange, Reply(200, f"Adapter {shown} registered".encode(), TEXT), self.client.pid
            )

        self._broadcast(messages.ADAPTER_LOAD, {"name": name, "src": src}, slots, done)

    def _unregister(self, exchange: Exchange, name: str, slots: list[int]) -> None:
        if name not in self.names:
            raise not_found(name)
        shown = exchange.header_text(ALIAS_HEADER) or name

        def done(replies: dict[int, Reply]) -> None:
            failed = [reply for reply in replies.values() if reply.status != 200]
            if failed:
                self.client.answer(exchange, failed[0], self.client.pid)
                return
            self.names.pop(name, None)
            self.client.answer(
                exchange, Reply(200, f"Adapter {shown} unregistered".encode(), TEXT), self.client.pid
            )

        self._broadcast(messages.ADAPTER_UNLOAD, {"name": name}, slots, done)

    def _broadcast(
        self, path: str, payload: dict[str, str], slots: list[int], done: Callable[[dict[int, Reply]], None]
    ) -> None:
        gather = _Gather(slots, done)
        body = json.dumps(payload).encode()
        headers = [(b"content-type", contract.JSON.encode())]
        for slot in slots:
            try:
                self.pool.submit(messages.INTERNAL, path, headers, [body], slot, gather, slot=slot)
            except InferenceError as exc:
                gather.answer(slot, error_reply(exc, debug=False), self.client.pid)
