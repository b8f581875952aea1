"""``:classify`` and ``:regress``: JSON examples -> serialized ``tf.train.Example`` -> the signature.

The request is ``{"signature_name": ..., "context": {...}, "examples": [{feature: value(s)}, ...]}``;
numbers with a fraction become float features, other numbers and booleans int64 features, strings and
``{"b64": ...}`` bytes features; ``context`` features are merged into every example. The signature must
have the classify (or regress) method, one string input ``inputs``, and ``classes`` / ``scores`` (or
``outputs``). Results are ``{"results": [[[label, score], ...], ...]}`` or ``{"results": [value, ...]}``.
Rules and messages: tensorflow/serving ``util/json_tensor.cc``, ``servables/tensorflow/classifier.cc`` and
``regressor.cc`` (https://github.com/tensorflow/serving); https://www.tensorflow.org/tfx/serving/api_rest.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from smkit.tfs.jsonfmt import PrettyWriter, decimal, json_value_text
from smkit.tfs.saved_models import CLASSIFY_METHOD, REGRESS_METHOD, LoadedVersion, Signature, run
from smkit.tfs.status import invalid
from smkit.tfs.tensors import decode_b64, is_b64, json_type, lossless

INPUTS = "inputs"
KINDS = {"bytes_list": "bytes", "float_list": "float", "int64_list": "int64"}


def _feature_error(name: str, value: Any) -> Exception:
    return invalid(f"Feature: {name} has element with unexpected JSON type: {json_type(value)}")


def _add(feature: Any, name: str, value: Any) -> None:
    if value is None or isinstance(value, list) or (isinstance(value, dict) and not is_b64(value)):
        raise _feature_error(name, value)
    item: int | float | bytes
    if isinstance(value, bool):
        kind, item = "int64_list", int(value)
    elif isinstance(value, dict):
        kind, item = "bytes_list", decode_b64(value)
    elif isinstance(value, str):
        kind, item = "bytes_list", value.encode("utf-8")
    elif isinstance(value, float):
        if not lossless(value, "float"):
            raise invalid(
                f"Cannot convert JSON value: {json_value_text(value)} to float without loss of precision."
            )
        kind, item = "float_list", value
    else:
        if value >= 2**63:
            raise invalid(f"Feature: {name} has uint64 element. Only int64 is supported.")
        kind, item = "int64_list", value
    current = feature.WhichOneof("kind")
    if current is not None and current != kind:
        raise invalid(f"Unexpected element type in feature: {name} expecting type: {KINDS[current]}")
    getattr(feature, kind).value.append(item)


def make_example(obj: Any) -> bytes:
    """One JSON object as a serialized ``tf.train.Example``."""
    import tensorflow as tf

    if not isinstance(obj, dict):
        raise invalid(f"Example must be JSON object but got JSON {json_type(obj)}")
    example = tf.train.Example()
    for name, content in obj.items():
        feature = example.features.feature[name]
        for value in content if isinstance(content, list) else [content]:
            _add(feature, name, value)
    return bytes(example.SerializeToString())


def serialized_examples(doc: dict[str, Any], method: str) -> list[bytes]:
    """The request's examples, each prefixed with the serialized context (protobuf merge semantics)."""
    context = make_example(doc["context"]) if "context" in doc else b""
    if "examples" not in doc:
        raise invalid(
            f"JSON Value: {json_value_text(doc)} When method is {method}, key 'examples' is expected and was not found"
        )
    examples = doc["examples"]
    if not isinstance(examples, list):
        raise invalid(f"JSON Value: {json_value_text(doc)} Expecting 'examples' value to be an list/array")
    if not examples:
        raise invalid(f"JSON Value: {json_value_text(doc)} 'examples' value is an empty array")
    return [context + make_example(e) for e in examples]


def _checked(loaded: LoadedVersion, name: str, method: str, kind: str) -> Signature:
    signature = loaded.signature(name)
    if signature.method_name != method:
        raise invalid(f"Expected {kind} signature method_name to be {method}. Was: {signature.method_name}")
    if list(signature.inputs) != [INPUTS] or signature.inputs[INPUTS].dtype != "DT_STRING":
        raise invalid(f"Expected one input Tensor of type string named {INPUTS!r}.")
    return signature


def _feed(examples: list[bytes]) -> dict[str, np.ndarray]:
    array = np.empty(len(examples), dtype=object)
    array[:] = examples
    return {INPUTS: array}


def classify(loaded: LoadedVersion, signature_name: str, examples: list[bytes]) -> str:
    """Run a classify signature on serialized examples; the ``results`` body."""
    signature = _checked(loaded, signature_name, CLASSIFY_METHOD, "classification")
    if not {"classes", "scores"} & set(signature.outputs):
        raise invalid("Expected classification signature outputs to contain classes and/or scores.")
    outputs = run(signature, _feed(examples))
    classes, scores = outputs.get("classes"), outputs.get("scores")
    batch = len(examples)
    width = (scores if scores is not None else classes).reshape(batch, -1).shape[1]  # type: ignore[union-attr]
    writer = PrettyWriter()
    writer.start_object()
    writer.key("results")
    writer.start_array()
    for i in range(batch):
        writer.single_line_arrays = True
        writer.start_array()
        for j in range(width):
            writer.start_array()
            label = classes.reshape(batch, -1)[i, j] if classes is not None else b""
            writer.string(
                label.decode("utf-8", "surrogateescape") if isinstance(label, bytes) else str(label)
            )
            score = float(scores.reshape(batch, -1)[i, j]) if scores is not None else 0.0
            writer.raw(decimal(score, single=True))
            writer.end_array()
        writer.end_array()
        writer.single_line_arrays = False
    writer.end_array()
    writer.end_object()
    return writer.text()


def regress(loaded: LoadedVersion, signature_name: str, examples: list[bytes]) -> str:
    """Run a regress signature on serialized examples; the ``results`` body."""
    signature = _checked(loaded, signature_name, REGRESS_METHOD, "regression")
    if "outputs" not in signature.outputs:
        raise invalid("No outputs found in regression signature.")
    values = run(signature, _feed(examples))["outputs"]
    if values.size != len(examples):
        raise invalid(
            f"Expected output Tensor shape to be either [batch_size] or [batch_size, 1] but got {list(values.shape)}"
        )
    writer = PrettyWriter()
    writer.start_object()
    writer.key("results")
    writer.single_line_arrays = True
    writer.start_array()
    for value in values.reshape(-1):
        writer.raw(decimal(float(value), single=True))
    writer.end_array()
    writer.end_object()
    return writer.text()
