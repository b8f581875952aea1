"""Warnings about hooks a handler leaves to the image's defaults, when the chosen image lacks them.

The AWS framework images apply their toolkit's default handlers to every hook ``inference.py`` does not
define (docs/handler-semantics.md): PyTorch's loads a TorchScript ``model.pt`` (or the only ``*.pt`` /
``*.pth`` file) and calls the model on a tensor; XGBoost's decodes CSV / LIBSVM into a ``DMatrix`` and calls
``model.predict``; scikit-learn's and the kit's image call ``model.predict`` on a NumPy array. Sources:
aws/sagemaker-pytorch-inference-toolkit ``default_pytorch_inference_handler.py``,
aws/sagemaker-xgboost-container ``serving.py``, aws/sagemaker-scikit-learn-container ``serving.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from smkit.packaging.errors import PackagingError

TORCH_MODEL_SUFFIXES = (".pt", ".pth")


def torchscript_file(artifacts_dir: Path) -> Path | None:
    """What PyTorch's default ``model_fn`` loads: ``model.pt``, else the only ``*.pt`` / ``*.pth`` file."""
    default = artifacts_dir / "model.pt"
    if default.is_file():
        return default
    found = [p for p in sorted(artifacts_dir.iterdir()) if p.is_file() and p.suffix in TORCH_MODEL_SUFFIXES]
    return found[0] if len(found) == 1 else None


def framework_warnings(
    hooks: dict[str, Any], model_type: str | None, artifacts_dir: Path, framework: str | None
) -> list[str]:
    """What the handler relies on that the image will not provide (raises when it cannot start at all)."""
    warnings: list[str] = []
    calls_model = "predict_fn" in hooks or "transform_fn" in hooks
    if framework == "pytorch" and "model_fn" not in hooks and torchscript_file(artifacts_dir) is None:
        raise PackagingError(
            f"artifacts folder {artifacts_dir}",
            "inference.py has no model_fn and there is no model.pt (nor a single *.pt / *.pth file) for the "
            "PyTorch image's default loader",
            "save the model with torch.jit.save(torch.jit.script(model), 'model.pt') into the artifacts, "
            "or define model_fn(model_dir)",
        )
    if framework is None and not calls_model and (model_type or "").startswith("torch."):
        warnings.append(
            f"model_fn returns a {model_type} and inference.py has no predict_fn: the kit's image calls "
            "model.predict(data), which torch modules do not have; define predict_fn(data, model), or deploy "
            "on AWS's PyTorch image (image.source: dlc), whose default predict_fn calls the model"
        )
    if framework in ("xgboost", "sklearn") and "model_fn" not in hooks:
        warnings.append(f"the {framework} image has no default model_fn; define model_fn(model_dir)")
    return warnings
