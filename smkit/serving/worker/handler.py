"""The handler lifecycle: hook lookup, context detection (once), load, invoke, error -> status.

This is the toolkit's ``Transformer`` (docs/handler-semantics.md) without its per-request signature counting:
every hook is inspected once at load, and a hook with one parameter more than the contract passes gets
the :class:`~smkit.serving.worker.context.Context` as its last argument.
"""

from __future__ import annotations

import inspect
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import CoroutineType
from typing import Any

from smkit import contract
from smkit.hooks import BATCH_HOOK, CHAIN, HookError, check_chain, describe, passes_context
from smkit.hosting.env import ServingEnv
from smkit.serving.wire.errors import BadRequest, InferenceError, InvocationTimeout
from smkit.serving.wire.reply import Reply, error_reply
from smkit.serving.worker import awaiting, codecs, integrity
from smkit.serving.worker.context import Context
from smkit.serving.worker.frameworks import framework_defaults
from smkit.serving.worker.modules import UserModule, forget, import_user_module
from smkit.serving.worker.streams import Stream, is_stream

_clock = time.perf_counter
NAN = math.nan

CHAIN_HOOKS = CHAIN
# Hooks of stateful sessions and LoRA adapters, all optional (docs/sessions-and-adapters.md).
CONTRACT_HOOKS = ("session_start_fn", "session_close_fn", "load_adapter_fn", "unload_adapter_fn")


@dataclass(frozen=True)
class Hook:
    """A hook with its context flag decided once."""

    name: str
    func: Callable[..., Any]
    takes_context: bool

    def __call__(self, context: Context | None, *args: Any) -> Any:
        result = self.func(*args, context) if self.takes_context else self.func(*args)
        if type(result) is CoroutineType:  # an ``async def`` hook: awaited on the worker's loop
            return awaiting.result(result)
        return result


def bind_hook(name: str, func: Callable[..., Any]) -> Hook:
    """Decide once whether ``func`` takes the trailing context (:func:`smkit.hooks.passes_context`).

    Raises :class:`smkit.hooks.HookSignatureError` (a TypeError) when the hook can never be called.
    """
    return Hook(name, func, passes_context(name, describe(func)))


@dataclass(kw_only=True)
class StreamedReply(Reply):
    """A reply whose body is streamed from ``stream`` (docs/streaming.md); ``body`` stays empty."""

    stream: Stream


def _to_bytes(body: Any) -> bytes:
    data = codecs.as_bytes(body)
    if data is not None:
        return data
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
        self._batch: Hook | None = None  # predict_batch_fn (docs/handler-semantics.md, dynamic batching)
        self._needs_context = False
        self._default_output = False  # output_fn is the default one: a streamed prediction bypasses it
        self._default_accept = env.default_accept
        # Stateful sessions and adapters (docs/sessions-and-adapters.md): name -> bound hook.
        self._contract_hooks: dict[str, Hook] = {}

    def _bind_hooks(self) -> tuple[Hook | None, Hook, Hook | None, Hook | None]:
        module = self.user_module.module if self.user_module else None
        defaults = framework_defaults(self.env)

        def user(name: str) -> Callable[..., Any] | None:
            return getattr(module, name, None) if module is not None else None

        transform = user("transform_fn")
        chain = [user(name) for name in CHAIN_HOOKS]
        batch = user(BATCH_HOOK)
        check_chain(name for name in ("transform_fn", *CHAIN_HOOKS, BATCH_HOOK) if user(name) is not None)
        _check_batching(batch, self.env)
        if transform is not None:
            self._transform = bind_hook("transform_fn", transform)
        else:
            # The default output_fn is bypassed for a streamed prediction unless it answers streams itself.
            self._default_output = chain[2] is None and not defaults.output_fn_streams
            if batch is not None:
                self._batch = bind_hook(BATCH_HOOK, batch)
            if chain[1] is not None or batch is None:
                predict = bind_hook("predict_fn", chain[1] or defaults.default_predict_fn)
            else:  # predict_batch_fn alone: each request outside a batch is a batch of one
                predict = Hook("predict_fn", self._predict_one, takes_context=True)
            self._chain = (
                bind_hook("input_fn", chain[0] or defaults.default_input_fn),
                predict,
                bind_hook("output_fn", chain[2] or defaults.default_output_fn),
            )
        bidirectional = user("bidirectional_fn")
        if bidirectional is not None:
            self._bidirectional = bind_hook("bidirectional_fn", bidirectional)
        for name in CONTRACT_HOOKS:
            func = user(name)
            if func is not None:
                self._contract_hooks[name] = bind_hook(name, func)
        pre = user("pre_model_fn")
        warmup = user("model_warmup_fn")
        model_fn = bind_hook("model_fn", user("model_fn") or defaults.default_model_fn)
        hooks = [h for h in (self._transform, *(self._chain or ()), self._batch) if h is not None]
        self._needs_context = any(h.takes_context for h in hooks)
        return (
            bind_hook("pre_model_fn", pre) if pre else None,
            model_fn,
            bind_hook("model_warmup_fn", warmup) if warmup else None,
            self._transform,
        )

    @property
    def batchable(self) -> bool:
        """The handler defines ``predict_batch_fn``: requests may be served in batches."""
        return self._batch is not None

    def _predict_one(self, data: Any, model: Any, context: Context | None) -> Any:
        """``predict_fn`` of a handler that defines only ``predict_batch_fn``: a batch of one."""
        return self._predict_batch([data], [context])[0]

    def _predict_batch(self, inputs: list[Any], contexts: list[Context | None]) -> list[Any]:
        """``predict_batch_fn`` on ``inputs``; its result must be a list (or tuple) of as many predictions."""
        assert self._batch is not None
        if self._batch.takes_context:
            result = self._batch.func(inputs, self.model, contexts)
        else:
            result = self._batch.func(inputs, self.model)
        if type(result) is CoroutineType:
            result = awaiting.result(result)
        if not isinstance(result, list | tuple) or len(result) != len(inputs):
            got = f"{len(result)} predictions" if isinstance(result, list | tuple) else type(result).__name__
            raise InferenceError(
                f"predict_batch_fn returned {got} for a batch of {len(inputs)} inputs; it must return a "
                "list with one prediction per input, in the inputs' order"
            )
        return list(result)

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

    @property
    def has_adapter_hooks(self) -> bool:
        """``load_adapter_fn`` is defined: this model serves the adapter API."""
        return "load_adapter_fn" in self._contract_hooks

    def call_contract_hook(self, name: str, *args: Any, session_dir: str | None = None) -> bool:
        """Run ``name(model, *args[, context])`` if the module defines it; False when it does not.

        The session and adapter hooks (docs/sessions-and-adapters.md); an exception propagates.
        """
        hook = self._contract_hooks.get(name)
        if hook is None:
            return False
        context = Context(model_name=self.name, model_dir=self.model_dir)
        context.session_dir = session_dir
        assert self.user_module is not None
        with self.user_module.active():
            hook(context, self.model, *args)
        return True

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
        """Run one request through the hooks; any exception becomes an error :class:`Reply`.

        The reply's ``timings`` hold the seconds each hook took, also of a failed request up to its failure.
        """
        # input_fn, predict_fn, output_fn seconds; then the phase running now and when it started.
        phases = [NAN, NAN, NAN, 0, _clock()]
        try:
            reply = self._invoke(body, headers, phases)
        except Exception as exc:  # noqa: BLE001 - every failure must become a response
            reply = error_reply(exc, debug=self.env.debug)
            phases[int(phases[3])] = _clock() - phases[4]  # the phase that failed, until it failed
        reply.timings = (NAN, phases[0], phases[1], phases[2], 0)
        return reply

    def _prepare(
        self, body: bytes, headers: Mapping[str, str]
    ) -> tuple[Any, str | None, str, Context | None]:
        """The data ``input_fn`` gets, the content type, the accept type and the context of one request."""
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
        return data, content_type, accept, context

    def _invoke(self, body: bytes, headers: Mapping[str, str], phases: list[float]) -> Reply:
        """The hooks' reply; ``phases`` gets each hook's seconds (and the phase running, for a failure)."""
        data, content_type, accept, context = self._prepare(body, headers)
        assert self.user_module is not None
        with self.user_module.active():
            if self._transform is not None:
                phases[3] = 1
                result = self._transform(context, self.model, data, content_type, accept)
                phases[1] = _clock() - phases[4]
            else:
                assert self._chain is not None
                input_fn, predict_fn, output_fn = self._chain
                decoded = input_fn(context, data, content_type)
                now = _clock()
                phases[0], phases[3], phases[4] = now - phases[4], 1, now
                prediction = predict_fn(context, decoded, self.model)
                now = _clock()
                phases[1], phases[3], phases[4] = now - phases[4], 2, now
                if self._default_output and is_stream(prediction):
                    result = (
                        prediction  # streamed items are encoded one by one (smkit.serving.worker.streams)
                    )
                else:
                    result = output_fn(context, prediction, accept)
                    phases[2] = _clock() - phases[4]
        return self._reply(result, accept, context)

    def _reply(self, result: Any, accept: str, context: Context | None) -> Reply:
        if isinstance(result, tuple) and len(result) == 2:
            payload, response_type = result
        else:
            payload, response_type = result, accept
        reply: Reply
        if is_stream(payload):
            assert self.user_module is not None
            active = self.user_module.active if self.isolated else None
            reply = StreamedReply(200, b"", str(response_type), stream=Stream(payload, active))
        else:
            reply = Reply(200, _to_bytes(payload), str(response_type))
        if context is not None:
            processor = context.request_processor[0]
            reply.headers = processor.response_headers
            if processor.status_code is not None:
                reply.status = processor.status_code
        return reply

    def invoke_batch(self, requests: Sequence[tuple[bytes, Mapping[str, str]]]) -> list[Reply]:
        """Serve ``requests`` (body, headers) with one ``predict_batch_fn`` call; one reply each, in order.

        Each request has its own ``input_fn`` and ``output_fn`` call (its own content type and accept):
        a request whose input fails is answered with its own error and left out of the batch; an error of
        ``predict_batch_fn`` (or a result of the wrong length) answers every request that reached it. A
        batched answer is a whole body: a stream is refused (docs/handler-semantics.md). The invocation
        deadline (:class:`InvocationTimeout`) ends the whole batch.
        """
        assert self._chain is not None and self.user_module is not None
        input_fn, _, output_fn = self._chain
        replies: list[Reply | None] = [None] * len(requests)
        inputs, outputs, batch = [NAN] * len(requests), [NAN] * len(requests), [NAN]
        ready: list[tuple[int, Any, str, Context | None]] = []
        debug = self.env.debug
        try:
            with self.user_module.active():
                for i, (body, headers) in enumerate(requests):
                    started = _clock()
                    try:
                        data, content_type, accept, context = self._prepare(body, headers)
                        ready.append((i, input_fn(context, data, content_type), accept, context))
                    except InvocationTimeout:
                        raise
                    except Exception as exc:  # noqa: BLE001 - this request's own error, not its batch's
                        replies[i] = error_reply(exc, debug=debug)
                    inputs[i] = _clock() - started
                started = _clock()
                try:
                    predictions = (
                        self._predict_batch([r[1] for r in ready], [r[3] for r in ready]) if ready else []
                    )
                except InvocationTimeout:
                    raise
                except Exception as exc:  # noqa: BLE001 - fails every request of the batch
                    failed = error_reply(exc, debug=debug)
                    for i, *_ in ready:
                        replies[i] = failed
                    predictions = []
                batch[0] = _clock() - started
                for (i, _, accept, context), prediction in zip(ready, predictions, strict=False):
                    started = _clock()
                    try:
                        replies[i] = self._whole(
                            self._reply(output_fn(context, prediction, accept), accept, context)
                        )
                    except InvocationTimeout:
                        raise
                    except Exception as exc:  # noqa: BLE001
                        replies[i] = error_reply(exc, debug=debug)
                    outputs[i] = _clock() - started
        except InvocationTimeout as exc:
            timed_out = error_reply(exc, debug=False)
            replies = [timed_out if r is None else r for r in replies]
        done = [r if r is not None else error_reply(InferenceError("no reply"), debug=False) for r in replies]
        batched = {r[0] for r in ready}
        # One Reply may answer several requests (a failed batch): each gets its own timings.
        return [
            replace(r, timings=(NAN, inputs[i], batch[0] if i in batched else NAN, outputs[i], 0))
            for i, r in enumerate(done)
        ]

    @staticmethod
    def _whole(reply: Reply) -> Reply:
        if isinstance(reply, StreamedReply):
            close = getattr(reply.stream.source, "close", None)  # a generator: run its finally blocks
            if callable(close):
                close()
            raise InferenceError(
                "output_fn returned a stream for a batched request; a batch answers whole bodies. Stream "
                f"from predict_fn with batching off ({contract.TS_BATCH_SIZE} unset or 1)"
            )
        return reply


def _check_batching(batch: Callable[..., Any] | None, env: ServingEnv) -> None:
    """Refuse at load: batching on without ``predict_batch_fn``, or a ``predict_batch_fn`` that streams."""
    if batch is None and env.batching:
        raise HookError(
            BATCH_HOOK,
            f"is not defined, but batching is on ({contract.TS_BATCH_SIZE}={env.batch_size})",
            f"define predict_batch_fn(inputs, model) in code/inference.py, returning one prediction per "
            f"input, or unset {contract.TS_BATCH_SIZE} (or set it to 1)",
        )
    if batch is not None and (inspect.isgeneratorfunction(batch) or inspect.isasyncgenfunction(batch)):
        raise HookError(
            BATCH_HOOK,
            "is a generator; a batched call returns whole predictions",
            "return a list with one prediction per input (stream from predict_fn, with batching off)",
        )
