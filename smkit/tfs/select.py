"""Which runtime serves a model: the toolkit runtime (:mod:`smkit.serving`) or the TF Serving form.

``auto`` picks the TF Serving form for a SavedModel layout (``<name>/<version>/saved_model.pb``) whose
``code/inference.py`` uses ``handler`` / ``input_handler`` + ``output_handler``, or has no ``inference.py``
at all, as the SageMaker TensorFlow Serving image would serve it; every other model gets the toolkit
runtime. ``tfs`` and ``toolkit`` force one.
"""

from __future__ import annotations

from collections.abc import Mapping

from smkit.tfs.layout import inspect_layout

MODES = ("auto", "toolkit", "tfs")
DEFAULT_MODEL_DIR = "/opt/ml/model"


def model_source(model: str | None, environ: Mapping[str, str]) -> str:
    """The model the server would serve: ``--model``, else ``$SM_MODEL_DIR``, else ``/opt/ml/model``."""
    return model or environ.get("SM_MODEL_DIR") or DEFAULT_MODEL_DIR


def use_tfs(mode: str, model: str | None, environ: Mapping[str, str]) -> bool:
    """Whether ``mode`` (one of :data:`MODES`) means the TF Serving form for this model."""
    if mode not in MODES:
        raise ValueError(f"serving mode {mode!r}: use one of {', '.join(MODES)}")
    if mode != "auto":
        return mode == "tfs"
    return inspect_layout(model_source(model, environ)).is_tfs
