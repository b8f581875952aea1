"""Predict responses: tensors -> ``{"predictions": ...}`` (row) or ``{"outputs": ...}`` (columnar).

Written as TensorFlow Serving writes them (tensorflow/serving ``tensorflow_serving/util/json_tensor.cc``,
https://github.com/tensorflow/serving): one prediction per line, a bare value for a single output and an
object for several, strings as UTF-8 text except outputs named ``*_bytes``, which are ``{"b64": ...}``.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

import numpy as np

from smkit.tfs.jsonfmt import PrettyWriter, decimal
from smkit.tfs.status import invalid
from smkit.tfs.tensors import B64, BYTES_SUFFIX


def write_value(writer: PrettyWriter, value: Any, dtype: np.dtype, as_bytes: bool) -> None:
    """One tensor element (``AddSingleValueAndAdvance``)."""
    if dtype == np.float32 or dtype == np.float16:
        writer.raw(decimal(float(value), single=True))
    elif dtype == np.float64:
        writer.raw(decimal(float(value), single=False))
    elif dtype == np.bool_:
        writer.raw("true" if value else "false")
    elif dtype.kind in "iu":
        writer.raw(str(int(value)))
    elif dtype.kind in "OSU":
        data = value if isinstance(value, bytes) else str(value).encode("utf-8")
        if as_bytes:
            writer.start_object()
            writer.key(B64)
            writer.string(base64.b64encode(data).decode("ascii"))
            writer.end_object()
        else:
            writer.string(data.decode("utf-8", "surrogateescape"))
    else:
        raise invalid(f"Failed to write JSON value for tensor type: {dtype}")


def write_tensor(writer: PrettyWriter, array: Any, dtype: np.dtype, as_bytes: bool) -> None:
    """A whole (sub)tensor as nested arrays; a scalar as its value (``AddTensorValues``)."""
    if not isinstance(array, np.ndarray) or array.ndim == 0:
        write_value(writer, array[()] if isinstance(array, np.ndarray) else array, dtype, as_bytes)
        return
    writer.start_array()
    for item in array:
        write_tensor(writer, item, dtype, as_bytes)
    writer.end_array()


def _as_bytes(name: str, array: np.ndarray) -> bool:
    return array.dtype.kind in "OS" and name.endswith(BYTES_SUFFIX)


def row_response(outputs: Mapping[str, np.ndarray]) -> str:
    """``{"predictions": [...]}``: one element per example; objects when there are several outputs."""
    batch = -1
    for name in sorted(outputs):
        array = outputs[name]
        if array.ndim == 0:
            raise invalid(f"Tensor name: {name} has no shape information ")
        if batch >= 0 and array.shape[0] != batch:
            raise invalid(
                f"Tensor name: {name} has inconsistent batch size: {array.shape[0]} expecting: {batch}"
            )
        batch = array.shape[0]
    writer = PrettyWriter()
    writer.start_object()
    writer.key("predictions")
    writer.start_array()
    several = len(outputs) > 1
    for item in range(batch):
        if several:
            writer.start_object()
        writer.single_line_arrays = True
        for name in sorted(outputs):
            if several:
                writer.key(name)
            write_tensor(writer, outputs[name][item], outputs[name].dtype, _as_bytes(name, outputs[name]))
        writer.single_line_arrays = False
        if several:
            writer.end_object()
    writer.end_array()
    writer.end_object()
    return writer.text()


def columnar_response(outputs: Mapping[str, np.ndarray]) -> str:
    """``{"outputs": ...}``: the tensor itself, or an object of named tensors."""
    writer = PrettyWriter()
    writer.start_object()
    writer.key("outputs")
    several = len(outputs) > 1
    if several:
        writer.start_object()
    for name in sorted(outputs):
        if several:
            writer.key(name)
        write_tensor(writer, outputs[name], outputs[name].dtype, _as_bytes(name, outputs[name]))
    if several:
        writer.end_object()
    writer.end_object()
    return writer.text()
