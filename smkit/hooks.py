"""Handler hook rules: which hooks exist, what each is called with, and whether a function can be called so.

One table and one decision, used by the packager's check (``smkit package``, in the probe that imports the
user's module and in the parent that reports), by the serving runtime when it binds a model's hooks, and by
nothing else. docs/handler-semantics.md explains the rules.

Standard library only and no smkit imports: the packager's probe loads this file by path into the
interpreter that imports the user's code, which need not have smkit installed.

Sources: https://github.com/aws/sagemaker-inference-toolkit/blob/master/src/sagemaker_inference/transformer.py
(``_run_handler_function``: one parameter more than the base arity means "pass the context") and
https://github.com/aws/sagemaker-tensorflow-serving-container (``python_service.py``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class HookSpec:
    """How the serving side calls one hook: its base arguments, and whether a trailing context may follow."""

    params: tuple[str, ...]
    context_optional: bool

    def call_shape(self, name: str) -> str:
        """``input_fn(input_data, content_type[, context])``."""
        extra = "[, context]" if self.context_optional else ""
        return f"{name}({', '.join(self.params)}{extra})"


TOOLKIT_HOOKS: dict[str, HookSpec] = {
    "pre_model_fn": HookSpec(("model_dir",), True),
    "model_fn": HookSpec(("model_dir",), True),
    "model_warmup_fn": HookSpec(("model_dir", "model"), True),
    "input_fn": HookSpec(("input_data", "content_type"), True),
    "predict_fn": HookSpec(("data", "model"), True),
    # Dynamic batching (docs/handler-semantics.md): what input_fn returned for each request of a batch, in
    # order; returns one prediction per input. Its optional trailing argument is the requests' contexts.
    "predict_batch_fn": HookSpec(("inputs", "model"), True),
    "output_fn": HookSpec(("prediction", "accept"), True),
    "transform_fn": HookSpec(("model", "input_data", "content_type", "accept"), True),
    # Bidirectional streaming (docs/streaming.md): an async generator of the messages to send.
    "bidirectional_fn": HookSpec(("model", "messages"), True),
    # Stateful sessions and LoRA adapters (docs/sessions-and-adapters.md).
    "session_start_fn": HookSpec(("model", "session_id"), True),
    "session_close_fn": HookSpec(("model", "session_id"), True),
    "load_adapter_fn": HookSpec(("model", "name", "src"), True),
    "unload_adapter_fn": HookSpec(("model", "name"), True),
}
TFS_HOOKS: dict[str, HookSpec] = {
    "handler": HookSpec(("data", "context"), False),
    "input_handler": HookSpec(("data", "context"), False),
    "output_handler": HookSpec(("data", "context"), False),
}
ALL_HOOKS: dict[str, HookSpec] = {**TOOLKIT_HOOKS, **TFS_HOOKS}
CHAIN = ("input_fn", "predict_fn", "output_fn")
BATCH_HOOK = "predict_batch_fn"
# A module-level string explaining why the image's default model loader is used instead of model_fn.
NO_MODEL_FN_ATTRIBUTE = "NO_MODEL_FN_REASON"

# A parameter as ``[name, kind, has_default]`` (kind: an ``inspect.Parameter`` kind name). Lists, not
# tuples, because the probe sends them through JSON.
Param = Sequence[Any]
_POSITIONAL = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")


class HookError(ValueError):
    """A handler hook that cannot be used: ``where`` (the hook), ``problem`` and ``fix``."""

    def __init__(self, where: str, problem: str, fix: str) -> None:
        super().__init__(f"{where}: {problem}; {fix}")
        self.where = where
        self.problem = problem
        self.fix = fix


class HookSignatureError(HookError, TypeError):
    """The hook's parameters do not accept the arguments it is called with."""


def describe(func: Callable[..., Any]) -> list[list[Any]] | None:
    """``func``'s parameters as ``[name, kind, has_default]`` lists; None when they cannot be inspected."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return None
    return [[p.name, p.kind.name, p.default is not p.empty] for p in signature.parameters.values()]


def _binds(params: Sequence[Param], count: int) -> bool:
    """Whether ``count`` positional arguments (and nothing else) bind to these parameters."""
    positional = [p for p in params if p[1] in _POSITIONAL]
    required = sum(1 for p in positional if not p[2])
    var_positional = any(p[1] == "VAR_POSITIONAL" for p in params)
    keyword_required = any(p[1] == "KEYWORD_ONLY" and not p[2] for p in params)
    return not keyword_required and required <= count and (count <= len(positional) or var_positional)


def passes_context(name: str, params: Sequence[Param] | None) -> bool:
    """Whether hook ``name`` is called with the trailing context; raise :class:`HookSignatureError` if never callable.

    As the toolkit: a function with exactly the base number of parameters gets the base arguments, one with
    exactly one more gets the context too. Where that count says nothing or would fail (keyword-only
    parameters, ``**kwargs``, extra parameters with defaults, ``*args``), the arguments that bind decide:
    the base arguments when they fit (the context too if the next parameter is named ``context``), else
    the base arguments plus the context. ``params`` None (a builtin without a signature): base arguments.
    """
    spec = ALL_HOOKS[name]
    if params is None:
        return False
    base = len(spec.params)
    plain = _binds(params, base)
    with_context = spec.context_optional and _binds(params, base + 1)
    if len(params) == base and plain:
        return False
    if len(params) == base + 1 and with_context:
        return True
    if plain and with_context:
        positional = [p for p in params if p[1] in _POSITIONAL]
        return len(positional) > base and positional[base][0] == "context"
    if plain or with_context:
        return with_context and not plain
    raise HookSignatureError(name, _signature_problem(name, spec, params), _signature_fix(name, spec))


def _signature_problem(name: str, spec: HookSpec, params: Sequence[Param]) -> str:
    keyword_required = [str(p[0]) for p in params if p[1] == "KEYWORD_ONLY" and not p[2]]
    if keyword_required:
        return (
            f"has required keyword-only parameter{'s' if len(keyword_required) > 1 else ''} "
            f"{', '.join(keyword_required)}, which {spec.call_shape(name)} never passes"
        )
    positional = [p for p in params if p[1] in _POSITIONAL]
    required = sum(1 for p in positional if not p[2])
    shown = f"{required} required" if required != len(positional) else str(len(positional))
    return (
        f"takes {shown} positional parameter{'s' if len(positional) != 1 else ''}, "
        f"but it is called as {spec.call_shape(name)}"
    )


def _signature_fix(name: str, spec: HookSpec) -> str:
    trailing = " (a trailing context parameter is optional)" if spec.context_optional else ""
    return f"define it as `def {name}({', '.join(spec.params)}):`{trailing}"


def check_chain(names: Iterable[str]) -> None:
    """Refuse ``transform_fn`` defined together with any of input_fn / predict_fn / output_fn (or
    predict_batch_fn, which runs between input_fn and output_fn).

    The toolkit refuses this at start-up; silently preferring one of them would hide half the user's code.
    """
    present = set(names)
    mixed = [h for h in (*CHAIN, BATCH_HOOK) if h in present]
    if "transform_fn" in present and mixed:
        raise HookError(
            "transform_fn",
            f"is defined together with {', '.join(mixed)}; the toolkit refuses this at start-up",
            f"keep transform_fn alone, or remove it and keep {', '.join(CHAIN)}",
        )
