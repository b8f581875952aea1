"""The packager's view of the handler hooks: which form they make, and whether each can be called.

The table and the call rule are :mod:`smkit.hooks`, shared with the serving runtime. Toolkit form
(sagemaker-inference-toolkit, docs/handler-semantics.md): ``model_fn`` at start-up, then either ``transform_fn`` or the ``input_fn -> predict_fn -> output_fn`` chain; every hook may take one extra
trailing ``context`` argument. TensorFlow Serving form (sagemaker-tensorflow-serving-container):
``handler(data, context)`` or both ``input_handler(data, context)`` and ``output_handler(data, context)``.
Sources: https://github.com/aws/sagemaker-inference-toolkit/blob/master/src/sagemaker_inference/transformer.py
and https://github.com/aws/sagemaker-tensorflow-serving-container (python_service.py).
"""

from __future__ import annotations

from typing import Any

from smkit.hooks import (
    ALL_HOOKS,
    CHAIN,
    NO_MODEL_FN_ATTRIBUTE,
    TFS_HOOKS,
    TOOLKIT_HOOKS,
    HookError,
    check_chain,
    passes_context,
)
from smkit.packaging.errors import PackagingError

__all__ = [
    "ALL_HOOKS",
    "CHAIN",
    "NO_MODEL_FN_ATTRIBUTE",
    "TFS_HOOKS",
    "TOOLKIT_HOOKS",
    "check_arity",
    "detect_form",
]


def check_arity(file: str, name: str, params: list[list[Any]] | None) -> None:
    """Raise when the serving runtime could not call hook ``name`` (:func:`smkit.hooks.passes_context`)."""
    try:
        passes_context(name, params)
    except HookError as exc:
        raise PackagingError(f"{file}: {name}", exc.problem, exc.fix) from None


def detect_form(
    file: str,
    hooks: dict[str, dict[str, Any]],
    no_model_fn_reason: str | None,
    *,
    framework: str | None = None,
) -> str:
    """Return ``"toolkit"`` or ``"tf-serving"``; raise when the hooks do not make a usable handler.

    ``framework``: the image's default handlers; PyTorch's load ``model.pt`` and the Hugging Face ones a
    pipeline themselves, so such a handler needs no ``model_fn`` (docs/handler-semantics.md).
    """
    own_loader = framework in ("pytorch", "huggingface")
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
    if not toolkit and not own_loader:
        raise PackagingError(
            file,
            "defines none of the handler hooks",
            "define model_fn(model_dir) and input_fn/predict_fn/output_fn or transform_fn",
        )
    try:
        check_chain(hooks)
    except HookError as exc:
        raise PackagingError(f"{file}: {exc.where}", exc.problem, exc.fix) from None
    if "model_fn" not in hooks and not no_model_fn_reason and not own_loader:
        raise PackagingError(
            f"{file}: model_fn",
            "is not defined (the toolkit stops with 'Please provide a model_fn implementation')",
            "define model_fn(model_dir) returning the loaded model, or set a module-level "
            f"{NO_MODEL_FN_ATTRIBUTE} = '...' explaining why the image's default loader is used "
            "(AWS's PyTorch image loads a TorchScript model.pt; with HF_TASK in the container's environment "
            "the Hugging Face defaults load a transformers pipeline)",
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
