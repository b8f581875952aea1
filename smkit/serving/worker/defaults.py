"""Default handlers for every hook a model's ``inference.py`` does not define (docs/handler-semantics.md)."""

from __future__ import annotations

import os
from typing import Any

from smkit.serving.wire.errors import InferenceError
from smkit.serving.worker import codecs


class MissingHook(InferenceError):
    """A required hook is absent and has no usable default."""


class DefaultHandlers:
    """The toolkit's ``DefaultInferenceHandler``, with the JSON/CSV/NPY/NPZ codec tables.

    ``default_predict_fn`` calls ``model.predict(data)`` when the model has one (what the framework
    images' defaults do for scikit-learn/XGBoost style models), else asks for a ``predict_fn``.
    """

    # Whether default_output_fn also answers a streamed prediction (else the runtime encodes its items).
    output_fn_streams = False

    def __init__(self, default_accept: str = codecs.JSON) -> None:
        self.default_accept = default_accept

    def default_model_fn(self, model_dir: str) -> Any:
        """No default: a model needs a ``model_fn`` (a transformers folder needs ``HF_TASK``, too)."""
        hint = ""
        if os.path.isfile(os.path.join(model_dir, "config.json")):
            hint = (
                "; the model folder holds a config.json: to serve a model saved with save_pretrained() "
                "by a transformers pipeline, set HF_TASK (e.g. text-classification) in the container's "
                "environment (docs/hugging-face.md)"
            )
        raise MissingHook(
            "Please provide a model_fn implementation in code/inference.py "
            "(def model_fn(model_dir): return the loaded model). "
            f"See https://sagemaker.readthedocs.io/en/stable/{hint}"
        )

    def default_input_fn(self, input_data: str | bytes, content_type: str | None) -> Any:
        """Decode the body by Content-Type (JSON, CSV, NPY, NPZ); 415 for other types, 400 when broken."""
        return codecs.decode(input_data, content_type)

    def default_predict_fn(self, data: Any, model: Any) -> Any:
        """``model.predict(data)`` when available."""
        predict = getattr(model, "predict", None)
        if predict is None:
            raise MissingHook(
                "Please provide a predict_fn implementation in code/inference.py "
                "(def predict_fn(data, model): ...); the loaded model has no predict method"
            )
        return predict(data)

    def default_output_fn(self, prediction: Any, accept: str) -> tuple[str | bytes, str]:
        """Encode with the first supported type of ``accept`` (a list, ``*/*`` -> the default accept)."""
        return codecs.encode(prediction, accept, self.default_accept)
