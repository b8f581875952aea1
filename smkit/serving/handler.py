"""The handler lifecycle: hook lookup, context detection (once), load, invoke, error -> status.

This is the toolkit's ``Transformer`` (docs/handler-semantics.md) without its per-request signature counting:
every hook is inspected once at load, and a hook with one parameter more than the contract passes gets
the :class:`~smkit.serving.context.Context` as its last argument.
"""

from __future__ import annotations

import json
import os
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from smkit.hooks import CHAIN, check_chain, describe, passes_context
from smkit.serving import codecs, integrity
from smkit.serving.context import Context
from smkit.serving.env import ServingEnv
from smkit.serving.errors import BadRequest, InferenceError, message_of, status_of, type_of
from smkit.serving.frameworks import framework_defaults
from smkit.serving.modules import UserModule, forget, import_user_module
from smkit.serving.streams import Stream, is_stream

CHAIN_HOOKS = CHAIN


@dataclass(frozen=True)
class Hook:
    """A hook with its context flag decided once."""

    name: str
    func: Callable[..., Any]
    takes_context: bool

    def __call__(self, context: Context | None, *args: Any) -> Any:
        if self.takes_context:
            return self.func(*args, context)
        return self.func(*args)


def bind_hook(name: str, func: Callable[..., Any]) -> Hook:
    """Decide once whether ``func`` takes the trailing context (:func:`smkit.hooks.passes_context`).

    Raises :class:`smkit.hooks.HookSignatureError` (a TypeError) when the hook can never be called.
    """
    return Hook(name, func, passes_context(name, describe(func)))


@dataclass
class Reply:
    """A protocol-neutral response; ``stream`` set: the body is streamed from it (docs/streaming.md)."""

    status: int
    body: bytes
    content_type: str
    headers: dict[str, str] = field(default_factory=dict)
    stream: Stream | None = None


def error_reply(exc: BaseException, *, debug: bool) -> Reply:
    """A JSON error body ``{"code", "type", "message"}`` (plus ``traceback`` in debug mode)."""
    status = status_of(exc)
    payload: dict[str, Any] = {"code": status, "type": type_of(exc, status), "message": message_of(exc)}
    if debug:
        payload["traceback"] = "".join(traceback.format_exception(exc))
    return Reply(status, json.dumps(payload).encode(), codecs.JSON)


def _to_bytes(body: Any) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, bytearray | memoryview):
        return bytes(body)
    if body is None:
        return b"null"  # as the toolkit's JSON encoding of None (for dict, list and int alike)
    return codecs.encode_json(body).encode("utf-8")


class ModelHandler:
    """One model: its user module, hooks and loaded model object.

    Args:
        name: model name (shown to hooks as ``context.model_name``).
        model_dir: the extracted model directory (``code/`` inside it holds the handler module).
        env: the serving environment (program name, default accept, debug flag).
        isolated: import the module privately (multi-model mode).
        extra_paths: directories holding this model's installed requirements.
    """

    def __init__(
        self,
        *,
        name: str,
        model_dir: str,
        env: ServingEnv,
        isolated: bool = False,
        extra_paths: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.model_dir = model_dir
        self.env = env
        self.isolated = isolated
        self.extra_paths = extra_paths
        self.model: Any = None
        self.loaded = False
        self.user_module: UserModule | None = None
        self._transform: Hook | None = None
        self._bidirectional: Hook | None = None
        self._chain: tuple[Hook, Hook, Hook] | None = None
        self._needs_context = False
        self._default_output = False  # output_fn is the default one: a streamed prediction bypasses it
        self._default_accept = env.default_accept

    def _bind_hooks(self) -> tuple[Hook | None, Hook, Hook | None, Hook | None]:
        module = self.user_module.module if self.user_module else None
        defaults = framework_defaults(self.env)

        def user(name: str) -> Callable[..., Any] | None:
            return getattr(module, name, None) if module is not None else None

        transform = user("transform_fn")
        chain = [user(name) for name in CHAIN_HOOKS]
        check_chain(name for name in ("transform_fn", *CHAIN_HOOKS) if user(name) is not None)
        if transform is not None:
            self._transform = bind_hook("transform_fn", transform)
        else:
            # The default output_fn is bypassed for a streamed prediction unless it answers streams itself.
            self._default_output = chain[2] is None and not defaults.output_fn_streams
            self._chain = (
                bind_hook("input_fn", chain[0] or defaults.default_input_fn),
                bind_hook("predict_fn", chain[1] or defaults.default_predict_fn),
                bind_hook("output_fn", chain[2] or defaults.default_output_fn),
            )
        bidirectional = user("bidirectional_fn")
        if bidirectional is not None:
            self._bidirectional = bind_hook("bidirectional_fn", bidirectional)
        pre = user("pre_model_fn")
        warmup = user("model_warmup_fn")
        model_fn = bind_hook("model_fn", user("model_fn") or defaults.default_model_fn)
        hooks = [h for h in (self._transform, *(self._chain or ())) if h is not None]
        self._needs_context = any(h.takes_context for h in hooks)
        return (
            bind_hook("pre_model_fn", pre) if pre else None,
            model_fn,
            bind_hook("model_warmup_fn", warmup) if warmup else None,
            self._transform,
        )

    def load(self) -> None:
        """Import the module and run pre_model_fn -> model_fn -> model_warmup_fn once."""
        integrity.verify_model_dir(self.model_dir)  # before code/ is imported and model_fn loads files
        self.user_module = import_user_module(
            os.path.join(self.model_dir, "code"),
            self.env.program,
            isolated=self.isolated,
            extra_paths=self.extra_paths,
        )
        pre, model_fn, warmup, _ = self._bind_hooks()
        context = Context(model_name=self.name, model_dir=self.model_dir)
        with self.user_module.active():
            if pre is not None:
                pre(context, self.model_dir)
            self.model = model_fn(context, self.model_dir)
            if warmup is not None:
                warmup(context, self.model_dir, self.model)
        self.loaded = True

    def unload(self) -> None:
        """Drop the model and its private modules."""
        self.model = None
        self.loaded = False
        if self.user_module is not None:
            forget(self.user_module)

    def session(self, messages: Any, headers: Mapping[str, str]) -> Any:
        """``bidirectional_fn(model, messages[, context])``: what a WebSocket session sends (docs/streaming.md)."""
        hook = self._bidirectional
        if hook is None:
            raise InferenceError(
                "this model has no bidirectional streaming handler; define "
                "bidirectional_fn(model, messages) in code/inference.py (an async generator: "
                "async for message in messages: yield answer)",
                status_code=404,
            )
        context = Context(model_name=self.name, model_dir=self.model_dir, headers=headers)
        assert self.user_module is not None
        with self.user_module.active():
            return hook(context, self.model, messages)

    def invoke(self, body: bytes, headers: Mapping[str, str]) -> Reply:
        """Run one request through the hooks; any exception becomes an error :class:`Reply`."""
        try:
            return self._invoke(body, headers)
        except Exception as exc:  # noqa: BLE001 - every failure must become a response
            return error_reply(exc, debug=self.env.debug)

    def _invoke(self, body: bytes, headers: Mapping[str, str]) -> Reply:
        content_type = headers.get("Content-Type")
        accept = headers.get("Accept")
        if not accept or accept == codecs.ANY:
            accept = self._default_accept
        data: str | bytes = body
        if content_type in codecs.UTF8_TYPES:
            try:
                data = body.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise BadRequest(f"body is not valid UTF-8 {content_type}: {exc}") from None
        context = (
            Context(model_name=self.name, model_dir=self.model_dir, headers=headers)
            if self._needs_context
            else None
        )
        assert self.user_module is not None
        with self.user_module.active():
            if self._transform is not None:
                result = self._transform(context, self.model, data, content_type, accept)
            else:
                assert self._chain is not None
                input_fn, predict_fn, output_fn = self._chain
                decoded = input_fn(context, data, content_type)
                prediction = predict_fn(context, decoded, self.model)
                if self._default_output and is_stream(prediction):
                    result = prediction  # streamed items are encoded one by one (smkit.serving.streams)
                else:
                    result = output_fn(context, prediction, accept)
        if isinstance(result, tuple) and len(result) == 2:
            payload, response_type = result
        else:
            payload, response_type = result, accept
        if is_stream(payload):
            active = self.user_module.active if self.isolated else None
            reply = Reply(200, b"", str(response_type), stream=Stream(payload, active))
        else:
            reply = Reply(200, _to_bytes(payload), str(response_type))
        if context is not None:
            processor = context.request_processor[0]
            reply.headers = processor.response_headers
            if processor.status_code is not None:
                reply.status = processor.status_code
        return reply
