"""The default handlers of AWS's framework images, for models deployed on one (``SMKIT_FRAMEWORK``).

Read from the images' own sources (docs/handler-semantics.md):

- PyTorch (aws/sagemaker-pytorch-inference-toolkit, ``default_pytorch_inference_handler.py``):
  ``model_fn`` loads ``model.pt`` (else the only ``*.pt`` / ``*.pth``) with ``torch.jit.load`` onto the GPU
  if there is one; ``input_fn`` decodes JSON / CSV / NPY into a float tensor; ``predict_fn`` calls the model
  in ``eval()`` mode under ``torch.no_grad()``; ``output_fn`` turns a tensor into a list and encodes it.
- XGBoost (aws/sagemaker-xgboost-container, ``serving.py`` and ``encoder.py``): ``input_fn`` decodes
  ``text/csv`` and ``text/libsvm`` into a ``DMatrix``; ``predict_fn`` is
  ``model.predict(data, validate_features=False)``; no default ``model_fn``.
- scikit-learn (aws/sagemaker-scikit-learn-container, ``serving.py`` on sagemaker-containers 2.8.6.post2):
  CSV read by ``csv.reader`` and squeezed (:func:`csv_rows`), JSON and CSV cast to float32,
  ``model.predict``; no default ``model_fn``.
- the kit's image (no ``SMKIT_FRAMEWORK``): the toolkit's decoders (``genfromtxt(dtype=None)`` for CSV),
  ``model.predict`` when the model has one (:mod:`smkit.serving.worker.defaults`).

The table of them all, with the toolkit's own defaults, is in docs/handler-semantics.md.
- Hugging Face (aws/sagemaker-huggingface-inference-toolkit): a ``transformers.pipeline`` chosen by
  ``HF_TASK`` (:mod:`smkit.serving.worker.huggingface`). The kit's image applies them too when ``HF_TASK`` or
  ``HF_MODEL_ID`` is set, and there ``text-generation`` can stream.

The framework (and NumPy) is imported only when a default that needs it runs: a model worker may run
in an environment without NumPy (docs/serving-runtime.md).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from smkit.contract import charset
from smkit.hosting.env import ServingEnv
from smkit.serving.wire.errors import BadRequest, UnsupportedMediaType
from smkit.serving.worker import codecs
from smkit.serving.worker.defaults import DefaultHandlers, MissingHook
from smkit.serving.worker.huggingface import HuggingFaceDefaults

if TYPE_CHECKING:
    import numpy as np

TORCH_MODEL_FILE = "model.pt"
TEXT_TYPES = ("application/json", "text/csv")
LIBSVM_TYPES = ("text/libsvm", "text/x-libsvm")


class PyTorchDefaults(DefaultHandlers):
    """AWS's PyTorch image: TorchScript ``model.pt`` loaded and called without any hook."""

    def default_model_fn(self, model_dir: str) -> Any:
        """``torch.jit.load`` of ``model.pt`` (or the only ``*.pt`` / ``*.pth`` file)."""
        import torch

        path = os.path.join(model_dir, TORCH_MODEL_FILE)
        if not os.path.exists(path):
            found = [f for f in sorted(os.listdir(model_dir)) if os.path.splitext(f)[1] in (".pt", ".pth")]
            if len(found) != 1:
                raise MissingHook(
                    f"Exactly one .pth or .pt file is required for PyTorch models without a model_fn: {found}"
                )
            path = os.path.join(model_dir, found[0])
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        try:
            return torch.jit.load(path, map_location=device).to(device)
        except RuntimeError as exc:
            raise MissingHook(
                f"Failed to load {path}. Please ensure model is saved using torchscript, or define model_fn"
            ) from exc

    def default_input_fn(self, input_data: str | bytes, content_type: str | None) -> Any:
        """The decoded array as a tensor (float32 for JSON and CSV, as the toolkit's FloatTensor)."""
        import numpy as np
        import torch

        array = codecs.decode(input_data, content_type)
        media = (content_type or "").split(";")[0].strip().lower()
        # As the image: torch.FloatTensor for JSON and CSV (a structured array from mixed CSV columns fails
        # there, 500), torch.from_numpy for NPY.
        tensor = torch.FloatTensor(array) if media in TEXT_TYPES else torch.as_tensor(np.asarray(array))
        return tensor.to(torch.device("cuda" if torch.cuda.is_available() else "cpu"))

    def default_predict_fn(self, data: Any, model: Any) -> Any:
        """``model(data)`` in eval mode, without gradients."""
        import torch

        with torch.no_grad():
            model.eval()
            return model(data)

    def default_output_fn(self, prediction: Any, accept: str) -> tuple[str | bytes, str]:
        """A tensor becomes a list first; then the generic encoders."""
        import torch

        if isinstance(prediction, torch.Tensor):
            prediction = prediction.detach().cpu().numpy().tolist()
        return super().default_output_fn(prediction, accept)


class XGBoostDefaults(DefaultHandlers):
    """AWS's XGBoost image: CSV and LIBSVM requests become a ``DMatrix``."""

    def default_input_fn(self, input_data: str | bytes, content_type: str | None) -> Any:
        """CSV (empty fields are missing values) or LIBSVM into a ``DMatrix``; 415 for other types."""
        import numpy as np
        import xgboost as xgb

        media = (content_type or "").split(";")[0].strip().lower()
        text = input_data.decode("utf-8") if isinstance(input_data, bytes) else input_data
        try:
            if media == "text/csv":
                rows = [
                    [v if v != "" else "nan" for v in line.split(",")] for line in text.strip().split("\n")
                ]
                return xgb.DMatrix(np.array(rows, dtype=np.float64))
            if media in LIBSVM_TYPES:
                return xgb.DMatrix(_libsvm(text))
        except ValueError as exc:
            raise BadRequest(f"cannot read the {media} body: {exc}") from exc
        raise UnsupportedMediaType(
            f"Content-Type {content_type!r} is not supported by the XGBoost image (text/csv, text/libsvm)"
        )

    def default_predict_fn(self, data: Any, model: Any) -> Any:
        """``model.predict(data, validate_features=False)``."""
        return model.predict(data, validate_features=False)


def _libsvm(text: str) -> np.ndarray:
    import numpy as np

    rows = [
        dict(tok.split(":", 1) for tok in line.split()[1:] if ":" in tok) for line in text.strip().split("\n")
    ]
    width = max((int(k) for row in rows for k in row), default=-1) + 1
    matrix = np.zeros((len(rows), width))
    for i, row in enumerate(rows):
        for k, v in row.items():
            matrix[i, int(k)] = float(v)
    return matrix


class SklearnDefaults(DefaultHandlers):
    """AWS's scikit-learn image: JSON and CSV decoded by sagemaker-containers 2.8.6.post2, cast to float32.

    The image serves a single model with ``sagemaker_sklearn_container.serving`` on sagemaker-containers
    (aws/sagemaker-scikit-learn-container ``src/sagemaker_sklearn_container/serving.py``,
    ``requirements.txt``): its CSV decoder is not ``genfromtxt`` but ``csv.reader`` rows made one array and
    squeezed (``_encoders.csv_to_numpy``), so a one-row body is a 1-D array and an empty field is not a
    number; ``default_input_fn`` then casts to float32, which fails for text (500).
    """

    def default_input_fn(self, input_data: str | bytes, content_type: str | None) -> Any:
        """JSON: ``np.array(json.loads(body))``; CSV: :func:`csv_rows`; then ``astype(float32)``."""
        import numpy as np

        media = codecs.media_type(content_type)
        if media == codecs.CSV:
            array = csv_rows(input_data, content_type)
        else:
            array = codecs.decode(input_data, content_type)
        return np.asarray(array).astype(np.float32) if media in TEXT_TYPES else array


def csv_rows(data: str | bytes, content_type: str | None) -> Any:
    """sagemaker-containers' ``csv_to_numpy``: ``csv.reader`` rows -> ``np.array(rows).squeeze()``, then
    ``astype(None)`` (float64), keeping the strings when a field is not a number; ragged rows are a 400."""
    import csv
    import io

    import numpy as np

    text = data if isinstance(data, str) else data.decode(charset(content_type), "replace")
    try:
        rows = list(
            csv.reader(io.StringIO(text), delimiter=",", quotechar='"', doublequote=True, strict=True)
        )
        array = np.array(rows).squeeze()
    except (csv.Error, ValueError) as exc:
        raise BadRequest(f"body is not rectangular CSV: {exc}") from None
    try:
        return array.astype(None)
    except ValueError:
        return array


DEFAULTS: dict[str | None, type[DefaultHandlers]] = {
    None: DefaultHandlers,
    "pytorch": PyTorchDefaults,
    "xgboost": XGBoostDefaults,
    "sklearn": SklearnDefaults,
    "tensorflow": DefaultHandlers,
    "huggingface": HuggingFaceDefaults,
}


def framework_defaults(env: ServingEnv) -> DefaultHandlers:
    """The default handlers of the image: its framework's, the Hugging Face ones, or the generic ones.

    On the kit's image (no ``SMKIT_FRAMEWORK``) ``HF_TASK`` / ``HF_MODEL_ID`` turn on the Hugging Face
    defaults, streaming included; AWS's Hugging Face image (``SMKIT_FRAMEWORK=huggingface``) has a model
    server that cannot stream, so there ``"stream": true`` is ignored as its toolkit ignores it.
    """
    if env.huggingface:
        return HuggingFaceDefaults(
            env.default_accept,
            task=env.hf_task,
            model_id=env.hf_model_id,
            trust_remote_code=env.hf_trust_remote_code,
            streaming=env.framework is None,
        )
    return DEFAULTS[env.framework](env.default_accept)


__all__ = [
    "DEFAULTS",
    "HuggingFaceDefaults",
    "PyTorchDefaults",
    "SklearnDefaults",
    "XGBoostDefaults",
    "framework_defaults",
]
