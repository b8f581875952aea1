"""Per-model environments: the interpreter and packages a model's handler runs with on this machine.

``smkit package``, ``inspect``, ``serve``, ``local-endpoint`` and ``batch-transform --local`` run the user's
handler with :func:`model_environment`: the image's Python version and packages plus the model's own
``code/requirements.txt``, built once and cached by content, never installed into the kit's venv.
"""

from smkit.modelenv.builder import (
    CACHE_VAR,
    ENVS_VAR,
    ModelEnvError,
    ModelEnvironment,
    cache_root,
    envs_enabled,
    image_environment,
    locked_environment,
)
from smkit.modelenv.image_runtime import ImageRuntime, config_runtime, dlc_runtime
from smkit.modelenv.modellayer import model_environment

__all__ = [
    "CACHE_VAR",
    "ENVS_VAR",
    "ImageRuntime",
    "ModelEnvError",
    "ModelEnvironment",
    "cache_root",
    "config_runtime",
    "dlc_runtime",
    "envs_enabled",
    "image_environment",
    "locked_environment",
    "model_environment",
]
