"""Request decoders and response encoders of AWS's Hugging Face inference images, as codec tables.

Read from aws/sagemaker-huggingface-inference-toolkit ``decoder_encoder.py`` and ``content_types.py``
(docs/hugging-face.md):

- ``application/json``: the JSON value as it is (``{"inputs": ..., "parameters": {...}}``), not an array.
- ``text/csv``: a header row naming ``inputs`` (or ``question`` / ``context``), one request per line:
  ``{"inputs": [row["inputs"], ...]}``, or ``{"inputs": [row, ...]}`` without an ``inputs`` column.
- images (``image/jpeg``, ``image/png``, ...): ``{"inputs": PIL.Image}`` (RGB); audio (``audio/x-flac``,
  ``audio/mpeg``, ``audio/wave``, ``audio/ogg``, ``audio/x-audio``): ``{"inputs": bytes}``.
- ``application/x-npy``: the array, read with ``allow_pickle=False`` (the toolkit allows pickles).
- Answers: ``application/json`` (NumPy values through ``tolist``, images as base64 PNG), ``text/csv``
  (one row per result dict, with a header), ``application/x-npy``, and the image types.

The toolkit answers 400 for every failure; here an unknown Content-Type is a 415 and an Accept type with
no encoder a 406, as for the kit's other defaults (docs/handler-semantics.md).
"""

from __future__ import annotations

import base64
import csv
import datetime
import io
import json
from collections.abc import Callable
from typing import Any

from smkit.contract import CSV, JSON, NPY, media_type
from smkit.serving.wire.errors import BadRequest, NotAcceptable, UnsupportedMediaType
from smkit.serving.worker.codecs import parse_accept

IMAGE_TYPES = (
    "image/jpeg",
    "image/png",
    "image/tiff",
    "image/bmp",
    "image/gif",
    "image/webp",
    "image/x-image",
)
AUDIO_TYPES = ("audio/x-flac", "audio/mpeg", "audio/wave", "audio/ogg", "audio/x-audio")
CSV_HEADERS = ("question", "context", "inputs")
# Tasks whose inputs are nested objects, which a CSV row cannot carry (the toolkit's preprocess refuses them).
NO_CSV_TASKS = ("zero-shot-classification", "table-question-answering")


def _text(data: str | bytes) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(f"body is not valid UTF-8 text: {exc}") from None


def decode_json(data: str | bytes) -> Any:
    """``json.loads`` of the body; malformed JSON is a 400."""
    try:
        return json.loads(_text(data))
    except json.JSONDecodeError as exc:
        raise BadRequest(
            f'body is not valid JSON ({exc}); send {{"inputs": ..., "parameters": {{...}}}}'
        ) from None


def decode_csv(data: str | bytes) -> dict[str, Any]:
    """A CSV with a header naming ``inputs`` (or ``question`` and ``context``) -> the request dict."""
    text = _text(data)
    lines = text.splitlines()
    if not lines or not any(header in lines[0].lower() for header in CSV_HEADERS):
        raise BadRequest(
            "text/csv requests need a header row naming the column 'inputs' (or 'question' and 'context'), "
            'e.g. "inputs\\nI love this movie\\n"'
        )
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows:
        raise BadRequest("the text/csv body has a header row but no request rows")
    if "inputs" in rows[0]:
        return {"inputs": [row["inputs"] for row in rows]}
    return {"inputs": rows}


def decode_image(data: str | bytes) -> dict[str, Any]:
    """``{"inputs": PIL.Image}`` in RGB."""
    from PIL import Image, UnidentifiedImageError

    try:
        return {"inputs": Image.open(io.BytesIO(_bytes(data))).convert("RGB")}
    except (UnidentifiedImageError, OSError) as exc:
        raise BadRequest(f"the body is not an image Pillow can read: {exc}") from None


def decode_audio(data: str | bytes) -> dict[str, Any]:
    """``{"inputs": bytes}``: the pipeline decodes the audio itself (with ffmpeg)."""
    return {"inputs": _bytes(data)}


def decode_npy(data: str | bytes) -> Any:
    """The array of a ``.npy`` body, without pickles."""
    import numpy as np

    try:
        return np.load(io.BytesIO(_bytes(data)), allow_pickle=False)
    except ValueError as exc:
        raise BadRequest(f"body is not a readable .npy array without pickles: {exc}") from None


def _bytes(data: str | bytes) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


DECODERS: dict[str, Callable[[str | bytes], Any]] = {
    JSON: decode_json,
    CSV: decode_csv,
    NPY: decode_npy,
    **dict.fromkeys(IMAGE_TYPES, decode_image),
    **dict.fromkeys(AUDIO_TYPES, decode_audio),
}


def decode(data: str | bytes, content_type: str | None, task: str | None) -> Any:
    """Decode by Content-Type (415 for types without a decoder; 400 for CSV to a nested-input task)."""
    kind = media_type(content_type)
    if kind == CSV and task in NO_CSV_TASKS:
        raise BadRequest(f"content type {kind} is not supported with HF_TASK={task}; send application/json")
    decoder = DECODERS.get(kind)
    if decoder is None:
        raise UnsupportedMediaType(
            f"Content-Type {content_type!r} is not supported by the Hugging Face defaults; use one of "
            f"{', '.join(sorted(DECODERS))} (or define input_fn in code/inference.py)"
        )
    return decoder(data)


def _jsonable(value: Any) -> Any:
    """The toolkit's ``_JSONEncoder.default``: NumPy numbers, ``tolist``, datetimes, images as base64 PNG."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, datetime.datetime):
        return str(value)
    if hasattr(value, "save") and hasattr(value, "mode"):  # a PIL image
        with io.BytesIO() as out:
            value.save(out, format="PNG")
            return base64.b64encode(out.getvalue()).decode("ascii")
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def encode_json(value: Any, accept: str) -> str:
    """Compact JSON, non-ASCII kept, NaN refused (``json.dumps(..., allow_nan=False)`` as the toolkit)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_jsonable)


def encode_csv(value: Any, accept: str) -> str:
    """One CSV row per result dict, with their keys as the header."""
    rows = value if isinstance(value, list) else [value]
    if not rows or not all(isinstance(row, dict) for row in rows):
        raise NotAcceptable(
            "text/csv answers need a pipeline result that is a list of dicts; use application/json"
        )
    stream = io.StringIO()
    writer = csv.DictWriter(stream, list(rows[0].keys()))
    writer.writeheader()
    writer.writerows(rows)
    return stream.getvalue()


def encode_npy(value: Any, accept: str) -> bytes:
    """``np.save`` of the result."""
    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, value, allow_pickle=False)
    return buffer.getvalue()


def encode_image(value: Any, accept: str) -> bytes:
    """A PIL image saved in the accepted format (``image/x-image`` -> PNG)."""
    if not (hasattr(value, "save") and hasattr(value, "mode")):
        raise NotAcceptable(f"{accept} answers need a pipeline that returns an image; use application/json")
    form = "PNG" if accept == "image/x-image" else accept.split("/")[-1].upper()
    with io.BytesIO() as out:
        value.save(out, format=form)
        return out.getvalue()


ENCODERS: dict[str, Callable[[Any, str], str | bytes]] = {
    JSON: encode_json,
    CSV: encode_csv,
    NPY: encode_npy,
    **dict.fromkeys(IMAGE_TYPES, encode_image),
}


def encode(value: Any, accept: str, default_accept: str) -> tuple[str | bytes, str]:
    """Encode with the first type of ``accept`` that has an encoder; return ``(body, content_type)``."""
    for kind in parse_accept(accept, default_accept):
        encoder = ENCODERS.get(kind)
        if encoder is not None:
            return encoder(value, kind), kind
    raise NotAcceptable(
        f"Accept {accept!r} names no type the Hugging Face defaults encode; use one of {', '.join(sorted(ENCODERS))}"
    )
