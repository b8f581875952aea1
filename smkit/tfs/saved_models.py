"""The models TensorFlow Serving would load, loaded by TensorFlow itself, and the calls on them.

Every version of every model found (:func:`smkit.tfs.layout.find_models`) is loaded with
``tf.saved_model.load``; its signatures are read from ``saved_model.pb`` as TensorFlow Serving reads them
(name, method, inputs and outputs with dtypes and shapes), and a request runs the signature's function.
Requests name a model and optionally a version (else the highest); errors carry TensorFlow Serving's codes
and messages (tensorflow/serving ``servables/tensorflow/predict_util.cc``, ``classifier.cc``,
``regressor.cc``, https://github.com/tensorflow/serving).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from smkit.tfs.layout import SAVED_MODEL, ServedModel
from smkit.tfs.status import TfsError, invalid, not_found
from smkit.tfs.tensors import TensorInfo

log = logging.getLogger("smkit.tfs")

DEFAULT_SIGNATURE = "serving_default"
PREDICT_METHOD = "tensorflow/serving/predict"
CLASSIFY_METHOD = "tensorflow/serving/classify"
REGRESS_METHOD = "tensorflow/serving/regress"


@dataclass(frozen=True)
class Signature:
    """One signature of a loaded SavedModel."""

    name: str
    method_name: str
    inputs: dict[str, TensorInfo]
    outputs: dict[str, TensorInfo]
    function: Any  # a ConcreteFunction taking the inputs as keyword arguments


@dataclass
class LoadedVersion:
    """One loaded version: its signatures and the ``signature_def`` map as JSON for ``/metadata``."""

    name: str
    version: int
    signatures: dict[str, Signature]
    signature_defs: dict[str, Any]
    keep: Any = None  # the loaded object, kept alive for its variables

    def signature(self, name: str) -> Signature:
        """The signature ``name`` (empty: ``serving_default``) or TensorFlow Serving's error."""
        key = name or DEFAULT_SIGNATURE
        found = self.signatures.get(key)
        if found is None:
            raise invalid(f'Serving signature name: "{key}" not found in signature def')
        return found


def _read_signature_defs(version_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    from google.protobuf import json_format
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString((version_dir / SAVED_MODEL).read_bytes())
    graph = next((g for g in proto.meta_graphs if "serve" in g.meta_info_def.tags), proto.meta_graphs[0])
    defs = {
        name: json_format.MessageToDict(
            sig, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )
        for name, sig in graph.signature_def.items()
    }
    infos = {
        name: (
            sig.method_name,
            {k: TensorInfo(_dtype_name(v.dtype)) for k, v in sig.inputs.items()},
            {k: TensorInfo(_dtype_name(v.dtype)) for k, v in sig.outputs.items()},
        )
        for name, sig in graph.signature_def.items()
    }
    return defs, infos


def _dtype_name(enum_value: int) -> str:
    from tensorflow.core.framework import types_pb2

    return str(types_pb2.DataType.Name(enum_value))


def load_version(model: ServedModel, version: int) -> LoadedVersion:
    """Load one version with TensorFlow; raise when it cannot be served."""
    import tensorflow as tf

    path = model.version_path(version)
    defs, infos = _read_signature_defs(path)
    loaded = tf.saved_model.load(str(path), tags=["serve"])
    signatures = {}
    for name, function in loaded.signatures.items():
        method, inputs, outputs = infos.get(name, (PREDICT_METHOD, {}, {}))
        signatures[name] = Signature(name, method, inputs, outputs, function)
    log.info("loaded %s version %d from %s: signatures %s", model.name, version, path, sorted(signatures))
    return LoadedVersion(model.name, version, signatures, defs, loaded)


class ModelStore:
    """Every loaded version by model name, and how a request picks one."""

    def __init__(self, versions: list[LoadedVersion]) -> None:
        self._models: dict[str, dict[int, LoadedVersion]] = {}
        for loaded in versions:
            self._models.setdefault(loaded.name, {})[loaded.version] = loaded

    @classmethod
    def load(cls, models: list[ServedModel]) -> ModelStore:
        """Load every version of every model."""
        return cls([load_version(model, version) for model in models for version in model.versions])

    def names(self) -> list[str]:
        """The served model names."""
        return sorted(self._models)

    def get(self, name: str, version: int | None, label: str | None = None) -> LoadedVersion:
        """The requested version, or the highest one; TensorFlow Serving's NOT_FOUND otherwise."""
        if label is not None:
            raise invalid(f"Unrecognized servable version label: {label}")
        versions = self._models.get(name, {})
        if version is None:
            if not versions:
                raise not_found(f"Servable not found for request: Latest({name})")
            return versions[max(versions)]
        if version not in versions:
            raise not_found(f"Servable not found for request: Specific({name}, {version})")
        return versions[version]

    def status(self, name: str, version: int | None) -> list[LoadedVersion]:
        """Versions for ``GET /v1/models/{name}[/versions/{v}]``, highest first."""
        versions = self._models.get(name, {})
        if version is not None:
            if version not in versions:
                raise not_found(f"Could not find version {version} of model {name}")
            return [versions[version]]
        if not versions:
            raise not_found(f"Could not find any versions of model {name}")
        return [versions[v] for v in sorted(versions, reverse=True)]


def _tf_message(exc: Exception) -> str:
    text = getattr(exc, "message", None) or str(exc)
    # TensorFlow's Python layer prefixes where the failing op was defined (a traceback, or "<stack traces
    # unavailable>") and appends the function it ran; the model server reports the kernel's message alone.
    if text.startswith("Graph execution error:"):
        text = text.rsplit("\n\n", 1)[-1].split("<stack traces unavailable>\n", 1)[-1]
    return re.sub(r" \[Op:[^\]]*\]\s*$", "", text).strip()


_TF_CODES = {
    "InvalidArgumentError": "INVALID_ARGUMENT",
    "NotFoundError": "NOT_FOUND",
    "FailedPreconditionError": "FAILED_PRECONDITION",
    "OutOfRangeError": "OUT_OF_RANGE",
    "UnimplementedError": "UNIMPLEMENTED",
    "ResourceExhaustedError": "RESOURCE_EXHAUSTED",
    "InternalError": "INTERNAL",
    "UnknownError": "UNKNOWN",
}


def run(signature: Signature, feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Call the signature; TensorFlow errors become TensorFlow Serving errors with the same code."""
    import tensorflow as tf

    try:
        tensors = {name: tf.constant(value) for name, value in feeds.items()}
        result = signature.function(**tensors)
    except tf.errors.OpError as exc:
        raise TfsError(_TF_CODES.get(type(exc).__name__, "UNKNOWN"), _tf_message(exc)) from None
    except (TypeError, ValueError) as exc:
        raise invalid(_tf_message(exc)) from None
    return {name: np.asarray(tensor.numpy()) for name, tensor in result.items()}
