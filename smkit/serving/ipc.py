"""Frames between the front end and its model workers (standard library only).

One frame is a 12-byte header (``!4sII``: a tag, the metadata length, the body length), the metadata as
compact JSON and the body bytes as they are. Both processes hold one end of a socketpair per worker.
Tags: ``REDY`` (worker -> front end, once: loaded or failed), ``JOB_`` (a request), ``RPLY`` (its reply),
``XTND`` (worker -> front end: a model load started, the job may take the load's time limit).
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

HEADER = struct.Struct("!4sII")
READY = b"REDY"
JOB = b"JOB_"
REPLY = b"RPLY"
EXTEND = b"XTND"
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def frame(tag: bytes, meta: Any, body: bytes = b"") -> bytes:
    """One frame's bytes."""
    encoded = _dumps(meta).encode()
    return HEADER.pack(tag, len(encoded), len(body)) + encoded + body


def send_frame(sock: socket.socket, tag: bytes, meta: Any, body: bytes = b"") -> None:
    """Write one frame on a blocking socket (the header and metadata and the body in one call)."""
    encoded = _dumps(meta).encode()
    head = HEADER.pack(tag, len(encoded), len(body)) + encoded
    sent = sock.sendmsg([head, body])
    if sent < len(head) + len(body):  # a large body, or a send cut short by a signal
        sock.sendall((head + body)[sent:])


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        count = sock.recv_into(view[got:])
        if count == 0:
            return None
        got += count
    return bytes(buffer)


def recv_frame(sock: socket.socket) -> tuple[bytes, Any, bytes] | None:
    """Read one frame from a blocking socket; None when the other end has closed."""
    head = _read_exactly(sock, HEADER.size)
    if head is None:
        return None
    tag, meta_size, body_size = HEADER.unpack(head)
    rest = _read_exactly(sock, meta_size + body_size) if meta_size + body_size else b""
    if rest is None:
        return None
    return tag, json.loads(rest[:meta_size]), rest[meta_size:]


class FrameBuffer:
    """Incremental frame parser for the front end's non-blocking side."""

    def __init__(self) -> None:
        self._data = bytearray()

    def feed(self, data: bytes) -> list[tuple[bytes, Any, bytes]]:
        """Add received bytes; return the frames they complete."""
        self._data += data
        frames = []
        while len(self._data) >= HEADER.size:
            tag, meta_size, body_size = HEADER.unpack_from(self._data)
            end = HEADER.size + meta_size + body_size
            if len(self._data) < end:
                break
            meta = json.loads(self._data[HEADER.size : HEADER.size + meta_size])
            body = bytes(self._data[HEADER.size + meta_size : end])
            del self._data[:end]
            frames.append((tag, meta, body))
        return frames
