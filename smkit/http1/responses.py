"""HTTP/1.1 response heads and chunked framing, as bytes ready for one ``write``.

Status lines take their reason phrase from :class:`http.HTTPStatus`; a code it does not know is refused
(``ValueError``), as is a header name that is not an RFC 9110 token or a value holding CR, LF or another
control character (a response splitting attempt: RFC 9110 §5.5). A streamed body is framed as chunks
(``size in hex CRLF data CRLF``) ended by the empty last chunk (RFC 9112 §7.1); an HTTP/1.0 client has no
chunked encoding, its body is the bytes themselves ended by the close.
"""

from __future__ import annotations

import email.utils
import http
import re
import time
from collections.abc import Iterable

# RFC 9110 §5.6.2: a field name is a token (no separators, controls or spaces).
_BAD_NAME = re.compile(b'[\x00-\x20\x7f-\xff()<>@,;:\\\\"/\\[\\]?={}]')
# RFC 9110 §5.5: no CR, LF, NUL or other controls in a value (a horizontal tab is allowed).
_BAD_VALUE = re.compile(b"[\x00-\x08\x0a-\x1f\x7f]")

STATUS_LINES: dict[int, bytes] = {
    int(status): b"HTTP/1.1 %d %s\r\n" % (status, status.phrase.encode("ascii")) for status in http.HTTPStatus
}
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
LAST_CHUNK = b"0\r\n\r\n"

Headers = Iterable[tuple[bytes | str, bytes | str]]


def status_line(status: int) -> bytes:
    """``HTTP/1.1 <status> <reason>\\r\\n``; ValueError for a status :class:`http.HTTPStatus` does not know."""
    line = STATUS_LINES.get(status)
    if line is None:
        raise ValueError(f"unknown HTTP status {status!r}: use one of http.HTTPStatus")
    return line


# Header names already checked, as bytes: a server sends the same few names in every response.
_CHECKED_NAMES: dict[bytes | str, bytes] = {}
_MAX_CHECKED_NAMES = 1024


def header_name(name: bytes | str) -> bytes:
    """``name`` as bytes; ValueError when it is not a token."""
    encoded = _CHECKED_NAMES.get(name)
    if encoded is not None:
        return encoded
    encoded = name.encode("latin-1") if isinstance(name, str) else name
    if not encoded or _BAD_NAME.search(encoded):
        raise ValueError(f"invalid header name {name!r}")
    if len(_CHECKED_NAMES) < _MAX_CHECKED_NAMES:
        _CHECKED_NAMES[name] = encoded
    return encoded


def header_value(value: bytes | str) -> bytes:
    """``value`` as bytes; ValueError when it could split the response (CR, LF, controls)."""
    encoded = (
        value.encode("latin-1") if isinstance(value, str) else value
    )  # UnicodeEncodeError is a ValueError
    if _BAD_VALUE.search(encoded):
        raise ValueError(f"invalid header value {value!r}")
    return encoded


def header_lines(headers: Headers) -> bytes:
    """``name: value\\r\\n`` for each pair, each checked.

    A text value that ``str.isprintable`` passes holds no control character, so only the others (a tab,
    a C1 character, bytes) take :func:`header_value`'s full check; a server writes a few values per
    response and this runs for each (a regular expression per value costs several times as much).
    """
    parts: list[bytes] = []
    for name, value in headers:
        if isinstance(value, str) and value.isprintable():
            encoded = value.encode("latin-1")
        else:
            encoded = header_value(value)
        parts += (_CHECKED_NAMES.get(name) or header_name(name), b": ", encoded, b"\r\n")
    return b"".join(parts)


class DateLine:
    """The ``date`` header line (RFC 9110 §6.6.1), formatted at most once a second."""

    __slots__ = ("_second", "_line")

    def __init__(self) -> None:
        self._second = -1
        self._line = b""

    def __call__(self) -> bytes:
        now = int(time.time())
        if now != self._second:
            self._second = now
            self._line = b"date: " + email.utils.formatdate(now, usegmt=True).encode("ascii") + b"\r\n"
        return self._line


def response_head(
    status: int,
    headers: Headers = (),
    *,
    length: int | None = None,
    chunked: bool = False,
    close: bool = False,
    date: bytes = b"",
    lines: bytes = b"",
) -> bytes:
    """A whole response head, ending with the blank line.

    ``length`` writes ``content-length``; ``chunked`` writes ``transfer-encoding: chunked`` (give neither for
    a body ended by the close); ``close`` writes ``connection: close``; ``date`` is a prepared header line
    (:class:`DateLine`). ``headers`` must not hold these framing fields themselves. ``lines`` are header
    lines the caller has encoded and checked itself (each ``name: value\r\n``), written before ``headers``.
    """
    line = STATUS_LINES.get(status) or status_line(status)  # status_line: the error for an unknown one
    parts = [line, date, lines, header_lines(headers)]
    if length is not None:
        parts.append(b"content-length: %d\r\n" % length)
    elif chunked:
        parts.append(b"transfer-encoding: chunked\r\n")
    if close:
        parts.append(b"connection: close\r\n")
    parts.append(b"\r\n")
    return b"".join(parts)


def framed(data: bytes, chunked: bool) -> list[bytes]:
    """``data`` as one chunk (or as itself without chunked encoding), for ``writelines``."""
    return [b"%x\r\n" % len(data), data, b"\r\n"] if chunked else [data]
