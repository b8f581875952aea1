"""Default handlers for every hook a model's ``inference.py`` does not define (docs/handler-semantics.md)."""

from __future__ import annotations

import os
from typing import Any

from smkit.serving.wire.errors import InferenceError
from smkit.serving.worker import codecs

# The toolkit's messages for a missing model_fn / predict_fn, on one line
# (sagemaker-inference 1.10.1 src/sagemaker_inference/default_inference_handler.py): log searches and
# runbooks that match them match smkit's too.
TOOLKIT_NO_MODEL_FN = (
    "Please provide a model_fn implementation. "
    "See documentation for model_fn at https://sagemaker.readthedocs.io/en/stable/"
)
TOOLKIT_NO_PREDICT_FN = (
    "Please provide a predict_fn implementation. "
    "See documentation for predict_fn at https://sagemaker.readthedocs.io/en/stable/"
)


class MissingHook(InferenceError):
    """A required hook is absent and has no usable default."""


class DefaultHandlers:
    """The kit's image: the toolkit's ``DefaultInferenceHandler`` with its JSON/CSV/NPY/NPZ codec tables.

    One addition: ``default_predict_fn`` calls ``model.predict(data)`` when the model has one (what the
    scikit-learn and XGBoost images' defaults do), else fails with the toolkit's own message. The defaults
    of each image a config can name are tabled in docs/handler-semantics.md (smkit/serving/worker/frameworks.py).
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
        raise MissingHook(f"{TOOLKIT_NO_MODEL_FN} (def model_fn(model_dir) in code/inference.py){hint}")

    def default_input_fn(self, input_data: str | bytes, content_type: str | None) -> Any:
        """Decode the body by Content-Type (JSON, CSV, NPY, NPZ); 415 for other types, 400 when broken."""
        return codecs.decode(input_data, content_type)

    def default_predict_fn(self, data: Any, model: Any) -> Any:
        """``model.predict(data)`` when the model has a ``predict`` method, else the toolkit's message."""
        predict = getattr(model, "predict", None)
        if not callable(predict):
            raise MissingHook(
                f"{TOOLKIT_NO_PREDICT_FN} (the loaded {type(model).__name__} has no predict method: "
                "def predict_fn(data, model) in code/inference.py)"
            )
        return predict(data)

    def default_output_fn(self, prediction: Any, accept: str) -> tuple[str | bytes, str]:
        """Encode with the first supported type of ``accept`` (a list, ``*/*`` -> the default accept)."""
        return codecs.encode(prediction, accept, self.default_accept)
