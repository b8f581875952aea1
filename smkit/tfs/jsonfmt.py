"""JSON exactly as TensorFlow Serving writes it: RapidJSON's pretty writer, its number and error formats.

TensorFlow Serving builds its REST responses with RapidJSON's ``PrettyWriter`` (4-space indent, arrays
of one prediction on one line), writes floats with six significant digits unless that does not round
trip (then ``max_digits10``), always with a ``.0`` on whole numbers, and wraps errors as
``{ "error": "<C-escaped message>" }``. Sources: tensorflow/serving ``tensorflow_serving/util/json_tensor.cc``
and ``tensorflow_serving/model_servers/http_rest_api_handler.cc`` (https://github.com/tensorflow/serving).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

INDENT = 4
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "'": "\\'", "\\": "\\\\"}


def decimal(value: float, *, single: bool) -> str:
    """A float as TensorFlow Serving writes it (``WriteDecimal``): ``2.5``, ``3.0``, ``1198.35742``, ``NaN``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "-Infinity" if value < 0 else "Infinity"
    text = f"{value:g}"
    exact = np.float32(text) == np.float32(value) if single else float(text) == value
    if not exact:
        text = f"{value:.{9 if single else 17}g}"
    if "." not in text and "e" not in text:
        text += ".0"
    return text


def c_escape(text: str) -> str:
    r"""absl::CEscape: ``\n \r \t \" \' \\`` escaped, every other unprintable or non-ASCII byte as octal."""
    out = []
    for byte in text.encode("utf-8", "surrogateescape"):
        char = chr(byte)
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif 0x20 <= byte < 0x7F:
            out.append(char)
        else:
            out.append(f"\\{byte:03o}")
    return "".join(out)


def error_body(message: str) -> bytes:
    """The REST API's error body (``FillJsonErrorMsg``); not strict JSON when the message holds a ``'``."""
    return f'{{ "error": "{c_escape(message)}" }}'.encode()


class PrettyWriter:
    """RapidJSON's ``PrettyWriter`` with its ``kFormatSingleLineArray`` option, writing into a string."""

    def __init__(self) -> None:
        self._out: list[str] = []
        self._levels: list[list[Any]] = []  # [in_array, value_count]
        self._has_root = False
        self.single_line_arrays = False

    def _indent(self) -> None:
        self._out.append(" " * (INDENT * len(self._levels)))

    def _prefix(self) -> None:
        if not self._levels:
            self._has_root = True
            return
        level = self._levels[-1]
        in_array, count = level
        if in_array:
            if count > 0:
                self._out.append(", " if self.single_line_arrays else ",")
            if not self.single_line_arrays:
                self._out.append("\n")
                self._indent()
        else:
            if count > 0:
                self._out.append(",\n" if count % 2 == 0 else ": ")
            else:
                self._out.append("\n")
            if count % 2 == 0:
                self._indent()
        level[1] += 1

    def start_object(self) -> None:
        self._open(False, "{")

    def end_object(self) -> None:
        self._close("}", own_line=True)

    def start_array(self) -> None:
        self._open(True, "[")

    def end_array(self) -> None:
        self._close("]", own_line=not self.single_line_arrays)

    def _open(self, in_array: bool, bracket: str) -> None:
        self._prefix()
        self._levels.append([in_array, 0])
        self._out.append(bracket)

    def _close(self, bracket: str, *, own_line: bool) -> None:
        """The closing ``bracket``, on a line of its own (``own_line``) when the container holds anything."""
        _, count = self._levels.pop()
        if count and own_line:
            self._out.append("\n")
            self._indent()
        self._out.append(bracket)

    def raw(self, text: str) -> None:
        """A value already formatted (a number, ``true``, a quoted string)."""
        self._prefix()
        self._out.append(text)

    def string(self, text: str) -> None:
        """A JSON string (RapidJSON escapes only what JSON requires; ``/`` and non-ASCII stay as they are)."""
        self.raw(json.dumps(text, ensure_ascii=False))

    key = string

    def value(self, obj: Any) -> None:
        """Any value parsed from JSON, as ``JsonValueToString`` prints it in error messages."""
        if isinstance(obj, dict):
            self.start_object()
            for k, v in obj.items():
                self.key(k)
                self.value(v)
            self.end_object()
        elif isinstance(obj, list):
            self.start_array()
            for v in obj:
                self.value(v)
            self.end_array()
        elif isinstance(obj, bool) or obj is None:
            self.raw(json.dumps(obj))
        elif isinstance(obj, int):
            self.raw(str(obj))
        elif isinstance(obj, float):
            single = math.isfinite(obj) and float(np.float32(obj)) == obj
            self.raw(decimal(obj, single=single))
        else:
            self.string(str(obj))

    def text(self) -> str:
        """Everything written so far."""
        return "".join(self._out)


def json_value_text(obj: Any) -> str:
    """How TensorFlow Serving quotes a request value inside an error message."""
    writer = PrettyWriter()
    writer.value(obj)
    return writer.text()
