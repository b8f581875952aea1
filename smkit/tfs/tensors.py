"""Predict requests: JSON -> tensors, with TensorFlow Serving's rules and messages.

Row format (``"instances"``: one element per example, objects for several named inputs) and columnar
format (``"inputs"``: one value, or an object of named inputs), ``{"b64": ...}`` for binary strings,
lossless-number and type checks; the response side is :mod:`smkit.tfs.predictions`. The rules and every message follow tensorflow/serving ``tensorflow_serving/util/json_tensor.cc``
(https://github.com/tensorflow/serving); see also https://www.tensorflow.org/tfx/serving/api_rest.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from smkit.tfs.jsonfmt import json_value_text
from smkit.tfs.status import TfsError, invalid

B64 = "b64"
BYTES_SUFFIX = "_bytes"

# TensorFlow DataType enum names -> (DataTypeString, NumPy dtype). Strings are NumPy object arrays of bytes.
DTYPES: dict[str, tuple[str, Any]] = {
    "DT_FLOAT": ("float", np.float32),
    "DT_DOUBLE": ("double", np.float64),
    "DT_INT32": ("int32", np.int32),
    "DT_INT16": ("int16", np.int16),
    "DT_INT8": ("int8", np.int8),
    "DT_UINT8": ("uint8", np.uint8),
    "DT_INT64": ("int64", np.int64),
    "DT_UINT32": ("uint32", np.uint32),
    "DT_UINT64": ("uint64", np.uint64),
    "DT_BOOL": ("bool", np.bool_),
    "DT_STRING": ("string", object),
    "DT_HALF": ("half", np.float16),
}
_INT_RANGES = {
    "int32": (-(2**31), 2**31 - 1),
    "int16": (-(2**31), 2**31 - 1),
    "int8": (-(2**31), 2**31 - 1),
    "uint8": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
}
_FLOAT_LIMITS = {
    "float": (2**24 - 1, float(np.finfo(np.float32).max)),
    "double": (2**53 - 1, float(np.finfo(np.float64).max)),
}


@dataclass(frozen=True)
class TensorInfo:
    """A signature input or output: its TensorFlow dtype enum name (``DT_FLOAT``)."""

    dtype: str

    @property
    def type_string(self) -> str:
        """``DataTypeString``: ``float``, ``int64``, ``string``..."""
        known = DTYPES.get(self.dtype)
        return known[0] if known else self.dtype.removeprefix("DT_").lower()


def json_type(value: Any) -> str:
    """RapidJSON's type name for a parsed JSON value."""
    if value is None:
        return "Null"
    if value is True:
        return "True"
    if value is False:
        return "False"
    if isinstance(value, dict):
        return "Object"
    if isinstance(value, list):
        return "Array"
    if isinstance(value, str):
        return "String"
    return "Number"


def is_b64(value: Any) -> bool:
    """``{"b64": "<string>"}`` and nothing else."""
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get(B64), str)


def decode_b64(value: Any) -> bytes:
    """The bytes of a ``{"b64": ...}`` object."""
    if not is_b64(value):
        raise invalid(f"JSON Value: {json_value_text(value)} not formatted correctly for base64 data")
    try:
        return base64.b64decode(value[B64], validate=True)
    except (binascii.Error, ValueError):
        raise invalid("Unable to base64 decode") from None


def _type_error(value: Any, type_string: str) -> TfsError:
    return invalid(
        f"JSON Value: {json_value_text(value)} Type: {json_type(value)} is not of expected type: {type_string}"
    )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def lossless(value: int | float, type_string: str) -> bool:
    """Whether a JSON number converts to ``float`` / ``double`` without loss (``IsLosslessDecimal``)."""
    max_int, max_float = _FLOAT_LIMITS[type_string]
    if isinstance(value, float) and not math.isfinite(value):
        return True
    if isinstance(value, int):
        return abs(value) <= max_int
    return -max_float <= value <= max_float


def convert_value(value: Any, info: TensorInfo) -> Any:
    """One JSON scalar as a value of the tensor's dtype (``AddValueToTensor``)."""
    kind = info.type_string
    if kind in ("float", "double"):
        if not _is_number(value):
            raise _type_error(value, kind)
        if not lossless(value, kind):
            raise invalid(
                f"Cannot convert JSON value: {json_value_text(value)} to {kind} without loss of precision."
            )
        return value
    if kind in _INT_RANGES:
        low, high = _INT_RANGES[kind]
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise _type_error(value, kind)
        return value
    if kind == "string":
        if not isinstance(value, str):
            raise _type_error(value, kind)
        return value.encode("utf-8")
    if kind == "bool":
        if not isinstance(value, bool):
            raise _type_error(value, kind)
        return value
    raise TfsError("UNIMPLEMENTED", f"Conversion of JSON Value: {json_value_text(value)} to type: {kind}")


def dense_shape(value: Any) -> list[int]:
    """The shape read off the first element at every level (``GetDenseTensorShape``)."""
    shape = []
    while isinstance(value, list):
        shape.append(len(value))
        if not value:
            break
        value = value[0]
    return shape


def _fill(value: Any, level: int, shape: list[int], info: TensorInfo, out: list[Any]) -> None:
    rank = len(shape)
    if not isinstance(value, list):
        if level != rank:
            raise invalid(
                f"JSON Value: {json_value_text(value)} found at incorrect level: {level + 1} in the JSON DOM. "
                f"Expected at level: {rank}"
            )
        if isinstance(value, dict):
            if info.type_string != "string":
                raise _type_error(value, info.type_string)
            out.append(decode_b64(value))
        else:
            out.append(convert_value(value, info))
        return
    if level >= rank:
        raise invalid(f"Encountered list at unexpected level: {level} expected < {rank}")
    if len(value) != shape[level]:
        raise invalid(
            f"Encountered list at unexpected size: {len(value)} at level: {level} expected size: {shape[level]}"
        )
    for item in value:
        _fill(item, level + 1, shape, info, out)


def to_array(values: list[Any], shape: list[int], info: TensorInfo) -> np.ndarray:
    """Flat converted values as an array of the signature's dtype."""
    known = DTYPES.get(info.dtype)
    dtype = known[1] if known else object
    if dtype is object:
        array = np.empty(len(values), dtype=object)
        array[:] = values
        return array.reshape(shape)
    return np.array(values, dtype=dtype).reshape(shape)


def tensor_from_json(value: Any, info: TensorInfo) -> tuple[list[int], list[Any]]:
    """The shape and flat values of one JSON tensor value."""
    shape = dense_shape(value)
    flat: list[Any] = []
    _fill(value, 0, shape, info, flat)
    return shape, flat


def shape_text(shape: list[int]) -> str:
    """``ShapeToString``: ``[2,3]``."""
    return "[" + ",".join(str(d) for d in shape) + "]"


def _element_is_object(value: Any) -> bool:
    return isinstance(value, dict) and not is_b64(value)


def _add_item(
    item: Any, name: str, inputs: Mapping[str, TensorInfo], state: dict[str, tuple[list[int], list[Any]]]
) -> None:
    if name not in inputs:
        raise invalid(f"JSON object: does not have named input: {name}")
    shape, flat = tensor_from_json(item, inputs[name])
    if name not in state:
        state[name] = (shape, flat)
        return
    first_shape, values = state[name]
    size = math.prod(first_shape)
    if size != math.prod(shape):
        raise invalid(f"Expecting tensor size: {size} but got: {math.prod(shape)}")
    if first_shape != shape:
        raise invalid(f"Expecting shape {shape_text(first_shape)} but got: {shape_text(shape)}")
    values.extend(flat)


def from_instances(instances: list[Any], inputs: Mapping[str, TensorInfo]) -> dict[str, np.ndarray]:
    """Row format: every element of ``instances`` is one example, batched along a new first dimension."""
    if not isinstance(instances[0], dict) and len(inputs) > 1:
        raise invalid(
            "instances is a plain list, but expecting list of objects as multiple input tensors required "
            "as per tensorinfo_map"
        )
    objects = _element_is_object(instances[0])
    names = sorted(inputs)
    state: dict[str, tuple[list[int], list[Any]]] = {}
    for index, element in enumerate(instances):
        if objects:
            if not _element_is_object(element):
                raise invalid(f"Expecting object but got list at item {index} of input list")
            for key, item in element.items():
                try:
                    _add_item(item, key, inputs, state)
                except TfsError as exc:
                    raise invalid(
                        f"Failed to process element: {index} key: {key} of 'instances' list. "
                        f"Error: {exc.to_string()}"
                    ) from None
            if set(element) != set(names):
                raise invalid(
                    f"Failed to process element: {index} of 'instances' list. JSON object: "
                    f"{json_value_text(element)} keys must be equal to: {','.join(names)}"
                )
        else:
            if _element_is_object(element):
                raise invalid(f"Expecting value/list but got object at item {index} of input list")
            try:
                _add_item(element, names[0], inputs, state)
            except TfsError as exc:
                raise invalid(
                    f"Failed to process element: {index} of 'instances' list. Error: {exc.to_string()}"
                ) from None
    count = len(instances)
    return {name: to_array(values, [count, *shape], inputs[name]) for name, (shape, values) in state.items()}


def from_inputs(value: Any, inputs: Mapping[str, TensorInfo]) -> dict[str, np.ndarray]:
    """Columnar format: one value for a single input, or an object keyed by input name."""
    if not isinstance(value, dict) or is_b64(value):
        if len(inputs) > 1:
            raise invalid(
                "inputs is a plain value/list, but expecting an object as multiple input tensors required "
                "as per tensorinfo_map"
            )
        name = next(iter(inputs))
        shape, flat = tensor_from_json(value, inputs[name])
        return {name: to_array(flat, shape, inputs[name])}
    tensors = {}
    for name in sorted(inputs):
        if name not in value:
            raise invalid(f"Missing named input: {name} in 'inputs' object.")
        shape, flat = tensor_from_json(value[name], inputs[name])
        tensors[name] = to_array(flat, shape, inputs[name])
    return tensors


def parse_request(body: bytes) -> dict[str, Any]:
    """The request document: a JSON object (``ParseJson``), with RapidJSON's error wording."""
    if not body:
        raise invalid("JSON Parse error: The document is empty")
    try:
        doc = json.loads(body)
    except json.JSONDecodeError as exc:
        raise invalid(f"JSON Parse error: {_rapidjson_message(exc.msg)} at offset: {exc.pos}") from None
    except UnicodeDecodeError as exc:
        raise invalid(f"JSON Parse error: Invalid encoding in string. at offset: {exc.start}") from None
    if not isinstance(doc, dict):
        raise invalid(f"JSON Value: {json_value_text(doc)} Is not object")
    return doc


_PARSE_MESSAGES = (
    ("Expecting value", "Invalid value."),
    ("Expecting property name", "Missing a name for object member."),
    ("Expecting ':'", "Missing a colon after a name of object member."),
    ("Expecting ','", "Missing a comma or '}' after an object member."),
    ("Extra data", "The document root must not be followed by other values."),
    ("Unterminated string", "Missing a closing quotation mark in string."),
    ("Invalid \\escape", "Invalid escape character in string."),
    ("Invalid \\uXXXX", "Incorrect hex digit after \\u escape in string."),
    ("Invalid control character", "Invalid encoding in string."),
)


def _rapidjson_message(python_message: str) -> str:
    for prefix, message in _PARSE_MESSAGES:
        if python_message.startswith(prefix):
            return message
    return "Unspecific syntax error."
