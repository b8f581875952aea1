"""Codec tables: content type -> decoder, accept type -> encoder, and Accept resolution.

Behaviour follows the sagemaker-inference toolkit's ``decoder``/``encoder`` modules (docs/handler-semantics.md)
with three deliberate differences (numpy is imported on first use, so a model worker whose environment
lacks it still serves handlers that never touch these codecs): ``.npy``/``.npz`` bodies are read with
``allow_pickle=False`` (the toolkit's ``allow_pickle=True`` runs arbitrary code from the request),
undecodable bodies raise :class:`~smkit.serving.wire.errors.BadRequest` (400) instead of a 500, and a prediction
holding NaN or an infinity is refused (500) instead of encoded as invalid JSON.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

from smkit.contract import ANY, CSV, JSON, NPY, NPZ, media_type
from smkit.contract import TEXT_BODY_TYPES as UTF8_TYPES
from smkit.contract import charset as _charset
from smkit.serving.wire.errors import BadRequest, InferenceError, NotAcceptable, UnsupportedMediaType

__all__ = ["ANY", "CSV", "JSON", "NPY", "NPZ", "UTF8_TYPES", "decode", "encode", "media_type", "parse_accept"]


def _text(data: str | bytes, content_type: str | None) -> str:
    if isinstance(data, str):
        return data
    try:
        return data.decode(_charset(content_type))
    except (UnicodeDecodeError, LookupError) as exc:
        raise BadRequest(f"body is not valid {_charset(content_type)} text: {exc}") from None


def decode_json(data: str | bytes, content_type: str | None) -> Any:
    """``np.array(json.loads(body))``; malformed JSON is a 400."""
    import numpy as np

    try:
        return np.array(json.loads(_text(data, content_type)))
    except json.JSONDecodeError as exc:
        raise BadRequest(f"body is not valid JSON: {exc}") from None
    except ValueError as exc:
        raise BadRequest(f"JSON body is not an array-like of numbers: {exc}") from None


def decode_csv(data: str | bytes, content_type: str | None) -> Any:
    """``np.genfromtxt(body, dtype=None, delimiter=",")``, the toolkit's CSV decoder; ragged rows are a 400.

    ``dtype=None`` types each column by its contents: integer columns stay integers, a single type for every
    column gives a plain array, and columns of different types give a structured array (``1,2,abc`` is one
    record of two integers and a string, which no model takes as numbers). NumPy's faster ``loadtxt`` is used
    where it provably returns the same array: every value an integer, or every column holding a value that is
    not a whole number (so ``genfromtxt`` would have typed it float).
    """
    import numpy as np

    text = _text(data, content_type)
    if text.strip():
        try:
            return np.loadtxt(io.StringIO(text), delimiter=",", dtype=np.int64)
        except (ValueError, OverflowError):
            pass
        try:
            floats = np.loadtxt(io.StringIO(text), delimiter=",", dtype=np.float64)
        except ValueError:
            floats = None
        if floats is not None and _every_column_fractional(floats, text):
            return floats
    try:
        return np.genfromtxt(io.StringIO(text), dtype=None, delimiter=",")
    except (ValueError, TypeError) as exc:  # TypeError: NumPy 2 fails so on some columns of int and text
        raise BadRequest(f"body is not rectangular CSV: {exc}".replace("\n", " ").strip()) from None


def _every_column_fractional(values: Any, text: str) -> bool:
    """Each column of a ``loadtxt`` result holds a value that is not a whole number (NaN and inf count)."""
    import numpy as np

    if values.size == 0 or "#" in text:  # comment lines make a 1-D result's orientation unknowable here
        return False
    with np.errstate(invalid="ignore"):
        fractional = np.mod(values, 1) != 0  # NaN and inf give NaN, which is != 0
    if values.ndim == 2:
        return bool(fractional.any(axis=0).all())
    if "\n" in text.strip():  # one column over several rows: any fractional value types the column
        return bool(fractional.any())
    return bool(fractional.all())  # one row: each value is a column of its own


def decode_npy(data: str | bytes, content_type: str | None) -> Any:
    """``np.load`` with ``allow_pickle=False``: object arrays (pickles) are refused with 400."""
    import numpy as np

    raw = data.encode() if isinstance(data, str) else data
    try:
        return np.load(io.BytesIO(raw), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise BadRequest(f"body is not a pickle-free .npy array: {exc}") from None


def decode_npz(data: str | bytes, content_type: str | None) -> Any:
    """A scipy.sparse matrix saved with ``save_npz`` (as the toolkit), else a dict of the arrays."""
    import numpy as np

    raw = data.encode() if isinstance(data, str) else data
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (ValueError, OSError, EOFError) as exc:
        raise BadRequest(f"body is not a pickle-free .npz archive: {exc}") from None
    if "format" in arrays and "shape" in arrays:
        try:
            import scipy.sparse
        except ImportError:
            # The toolkit's decoder always returns the sparse matrix (scipy is its dependency): handing the
            # handler the archive's raw arrays instead would change what predict_fn receives.
            raise InferenceError(
                "application/x-npz: the body is a scipy.sparse matrix (scipy.sparse.save_npz) but scipy is "
                "not installed in the model's environment; add scipy to code/requirements.txt"
            ) from None
        try:
            return scipy.sparse.load_npz(io.BytesIO(raw))
        except (ValueError, KeyError) as exc:
            raise BadRequest(f"body is not a valid scipy.sparse .npz: {exc}") from None
    return arrays


def _tolist(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "toarray"):
        return value.toarray().tolist()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# A prediction holding NaN or an infinity has no JSON form (RFC 8259 section 6): the toolkit's
# json.dumps writes the bare tokens NaN / Infinity, which a JSON parser refuses; smkit answers 500 instead.
NOT_JSON = (
    "the prediction holds NaN or an infinity, which JSON cannot carry (RFC 8259 section 6); replace them in "
    "predict_fn or output_fn (e.g. numpy.nan_to_num, or None for a missing value), or answer another Accept "
    "type such as text/csv"
)


def as_bytes(value: Any) -> bytes | None:
    """A hook's answer that already is data as bytes: ``bytes`` (or ``bytearray``/``memoryview``) as they
    are, ``str`` as UTF-8; None for any other value, which a codec encodes."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    return None


def encode_json(value: Any) -> str:
    """``json.dumps`` with arrays converted through ``tolist`` (toolkit ``_array_to_json``); NaN and
    infinities are refused with a 500 (:data:`NOT_JSON`) instead of written as invalid JSON."""
    try:
        if hasattr(value, "tolist") and not isinstance(value, list | dict | str):
            return json.dumps(value.tolist(), allow_nan=False)  # numpy arrays and scalars, torch tensors
        return json.dumps(value, default=_tolist, allow_nan=False)
    except ValueError as exc:
        if "Out of range float values" not in str(exc):
            raise
        raise InferenceError(NOT_JSON) from None


def encode_csv(value: Any) -> str:
    """``np.savetxt(fmt="%s", delimiter=",")``: one line per row; a 1-D array gives one value per line."""
    import numpy as np

    stream = io.StringIO()
    np.savetxt(
        stream,
        np.asarray(value) if not hasattr(value, "toarray") else value.toarray(),
        delimiter=",",
        fmt="%s",
    )
    return stream.getvalue()


def encode_npy(value: Any) -> bytes:
    """``np.save`` of the array (object arrays are refused: a client must not receive pickles)."""
    import numpy as np

    stream = io.BytesIO()
    np.save(stream, np.asarray(value), allow_pickle=False)
    return stream.getvalue()


def encode_npz(value: Any) -> bytes:
    """A scipy.sparse matrix via ``save_npz``, anything else as ``np.savez(arr_0=...)``."""
    import numpy as np

    stream = io.BytesIO()
    if hasattr(value, "tocsr") and hasattr(value, "nnz"):
        import scipy.sparse

        scipy.sparse.save_npz(stream, value)
    else:
        np.savez(stream, np.asarray(value))
    return stream.getvalue()


Decoder = Callable[[str | bytes, str | None], Any]
Encoder = Callable[[Any], str | bytes]

DECODERS: dict[str, Decoder] = {JSON: decode_json, CSV: decode_csv, NPY: decode_npy, NPZ: decode_npz}
ENCODERS: dict[str, Encoder] = {JSON: encode_json, CSV: encode_csv, NPY: encode_npy, NPZ: encode_npz}


def decode(data: str | bytes, content_type: str | None) -> Any:
    """Decode ``data`` by its Content-Type (parameters such as charset are tolerated)."""
    decoder = DECODERS.get(media_type(content_type))
    if decoder is None:
        if not content_type:
            raise UnsupportedMediaType(f"missing Content-Type; send one of {', '.join(sorted(DECODERS))}")
        raise UnsupportedMediaType(
            f"Content-Type {content_type!r} is not supported; use one of {', '.join(sorted(DECODERS))}"
        )
    return decoder(data, content_type)


def _quality(item: str) -> float:
    for param in item.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "q":
            try:
                return min(1.0, max(0.0, float(value.strip())))
            except ValueError:
                return 1.0
    return 1.0


def parse_accept(accept: str, default_accept: str = JSON) -> list[str]:
    """The media types of an Accept value, most preferred first (RFC 9110 section 12.5.1).

    Types are ordered by their q-value (ties keep their order); ``q=0`` means "not acceptable" and drops
    the type. ``*/*`` (or an empty value) stands for the default accept type, or for the first encodable
    type not refused with ``q=0`` when the default is refused.
    """
    weighted: list[tuple[float, str]] = []
    refused: set[str] = set()
    for item in accept.split(","):
        kind = media_type(item)
        quality = _quality(item)
        if quality <= 0.0:
            refused.add(kind)
        else:
            weighted.append((quality, kind or ANY))
    weighted.sort(key=lambda pair: -pair[0])  # stable: equal weights keep the client's order
    types: list[str] = []
    if not weighted and not refused:
        weighted = [(1.0, ANY)]
    for _, kind in weighted:
        if kind == ANY:
            candidates = [media_type(default_accept), *ENCODERS]
            kind = next((c for c in candidates if c not in refused), "")
        if kind and kind not in types and kind not in refused:
            types.append(kind)
    return types


def encode(value: Any, accept: str, default_accept: str = JSON) -> tuple[str | bytes, str]:
    """Encode ``value`` with the first Accept type that has an encoder; return ``(body, content_type)``."""
    for kind in parse_accept(accept, default_accept):
        encoder = ENCODERS.get(kind)
        if encoder is not None:
            return encoder(value), kind
    raise NotAcceptable(
        f"Accept {accept!r} names no supported type; use one of {', '.join(sorted(ENCODERS))}"
    )
