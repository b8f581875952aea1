"""The handler hooks a SageMaker framework image calls, their arities, and the rules between them.

Toolkit form (sagemaker-inference-toolkit, docs/handler-semantics.md): ``model_fn`` at start-up, then either
``transform_fn`` or the ``input_fn -> predict_fn -> output_fn`` chain; every hook may take one extra
trailing ``context`` argument. TensorFlow Serving form (sagemaker-tensorflow-serving-container):
``handler(data, context)`` or both ``input_handler(data, context)`` and ``output_handler(data, context)``.
Sources: https://github.com/aws/sagemaker-inference-toolkit/blob/master/src/sagemaker_inference/transformer.py
and https://github.com/aws/sagemaker-tensorflow-serving-container (python_service.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from smkit.packaging.errors import PackagingError


@dataclass(frozen=True)
class HookSpec:
    """How the serving side calls one hook."""

    params: tuple[str, ...]
    context_optional: bool


TOOLKIT_HOOKS: dict[str, HookSpec] = {
    "model_fn": HookSpec(("model_dir",), True),
    "input_fn": HookSpec(("input_data", "content_type"), True),
    "predict_fn": HookSpec(("data", "model"), True),
    "output_fn": HookSpec(("prediction", "accept"), True),
    "transform_fn": HookSpec(("model", "input_data", "content_type", "accept"), True),
    "pre_model_fn": HookSpec(("model_dir",), True),
    "model_warmup_fn": HookSpec(("model_dir", "model"), True),
}
TFS_HOOKS: dict[str, HookSpec] = {
    "handler": HookSpec(("data", "context"), False),
    "input_handler": HookSpec(("data", "context"), False),
    "output_handler": HookSpec(("data", "context"), False),
}
ALL_HOOKS: dict[str, HookSpec] = {**TOOLKIT_HOOKS, **TFS_HOOKS}
CHAIN = ("input_fn", "predict_fn", "output_fn")
# A module-level string explaining why the image's default model loader is used instead of model_fn.
NO_MODEL_FN_ATTRIBUTE = "NO_MODEL_FN_REASON"

POSITIONAL = {"POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD"}


def call_shape(spec: HookSpec) -> str:
    """How the hook is called, e.g. ``input_fn(input_data, content_type[, context])``."""
    extra = "[, context]" if spec.context_optional else ""
    return f"({', '.join(spec.params)}{extra})"


def accepts(params: list[list[Any]], count: int) -> bool:
    """Whether a function with these ``[kind, has_default]`` parameters can be called with ``count`` args."""
    positional = [p for p in params if p[0] in POSITIONAL]
    required = sum(1 for p in positional if not p[1])
    var_positional = any(p[0] == "VAR_POSITIONAL" for p in params)
    kw_required = any(p[0] == "KEYWORD_ONLY" and not p[1] for p in params)
    return not kw_required and required <= count and (count <= len(positional) or var_positional)


def check_arity(file: str, name: str, params: list[list[Any]] | None) -> None:
    """Raise when the serving side could not call hook ``name`` with its arguments."""
    if params is None:
        return
    spec = ALL_HOOKS[name]
    counts = [len(spec.params)] + ([len(spec.params) + 1] if spec.context_optional else [])
    if any(accepts(params, n) for n in counts):
        return
    positional = sum(1 for p in params if p[0] in POSITIONAL)
    raise PackagingError(
        f"{file}: {name}",
        f"takes {positional} positional parameter{'s' if positional != 1 else ''}, "
        f"but it is called as {name}{call_shape(spec)}",
        f"define it as `def {name}({', '.join(spec.params)}):`",
    )


def detect_form(
    file: str,
    hooks: dict[str, dict[str, Any]],
    no_model_fn_reason: str | None,
    *,
    framework: str | None = None,
) -> str:
    """Return ``"toolkit"`` or ``"tf-serving"``; raise when the hooks do not make a usable handler.

    ``framework``: the AWS framework image the model is deployed on; PyTorch's loads ``model.pt`` itself,
    so a PyTorch handler needs no ``model_fn`` (docs/handler-semantics.md).
    """
    for name, info in hooks.items():
        if not info["callable"]:
            raise PackagingError(f"{file}: {name}", "is defined but not callable", f"make {name} a function")
    toolkit = sorted(h for h in hooks if h in TOOLKIT_HOOKS)
    tfs = sorted(h for h in hooks if h in TFS_HOOKS)
    if toolkit and tfs:
        raise PackagingError(
            file,
            f"mixes toolkit hooks ({', '.join(toolkit)}) with TF-Serving hooks ({', '.join(tfs)})",
            "use one form: model_fn + input_fn/predict_fn/output_fn (or transform_fn), "
            "or handler / input_handler + output_handler for TensorFlow Serving",
        )
    if tfs:
        _check_tfs(file, set(tfs))
        return "tf-serving"
    if not toolkit and framework != "pytorch":
        raise PackagingError(
            file,
            "defines none of the handler hooks",
            "define model_fn(model_dir) and input_fn/predict_fn/output_fn or transform_fn",
        )
    mixed = [h for h in CHAIN if h in hooks]
    if "transform_fn" in hooks and mixed:
        raise PackagingError(
            f"{file}: transform_fn",
            f"is defined together with {', '.join(mixed)}; the toolkit refuses this at start-up",
            f"keep transform_fn alone, or remove it and keep {', '.join(CHAIN)}",
        )
    if "model_fn" not in hooks and not no_model_fn_reason and framework != "pytorch":
        raise PackagingError(
            f"{file}: model_fn",
            "is not defined (the toolkit stops with 'Please provide a model_fn implementation')",
            "define model_fn(model_dir) returning the loaded model, or set a module-level "
            f"{NO_MODEL_FN_ATTRIBUTE} = '...' explaining why the image's default loader is used "
            "(only AWS's PyTorch image has one: it loads a TorchScript model.pt)",
        )
    return "toolkit"


def _check_tfs(file: str, tfs: set[str]) -> None:
    if "handler" in tfs and tfs & {"input_handler", "output_handler"}:
        raise PackagingError(
            f"{file}: handler",
            "is defined together with input_handler/output_handler, which it would silently replace",
            "keep handler alone, or remove it and keep input_handler + output_handler",
        )
    if "handler" not in tfs and len(tfs) == 1:
        (only,) = tfs
        other = "output_handler" if only == "input_handler" else "input_handler"
        raise PackagingError(
            f"{file}: {other}",
            f"is missing; TF-Serving images need both input_handler and output_handler (found only {only})",
            f"define {other}(data, context), or use a single handler(data, context)",
        )
