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


class FrameReader:
    """Blocking frame reader with one reusable buffer: one ``recv`` per frame when the frame fits."""

    def __init__(self, sock: socket.socket, size: int = 256 * 1024) -> None:
        self.sock = sock
        self.buffer = bytearray(size)
        self.view = memoryview(self.buffer)
        self.start = 0
        self.end = 0

    def _fill(self, need: int) -> bool:
        """Make at least ``need`` bytes available from ``start``; False at end of stream."""
        while self.end - self.start < need:
            if self.start + need > len(self.buffer):  # move the partial frame to the front, or grow
                pending = self.end - self.start
                if need > len(self.buffer):
                    grown = bytearray(max(need, 2 * len(self.buffer)))
                    grown[:pending] = self.view[self.start : self.end]
                    self.buffer, self.view = grown, memoryview(grown)
                else:
                    self.buffer[:pending] = self.view[self.start : self.end]
                self.start, self.end = 0, pending
            count = self.sock.recv_into(self.view[self.end :])
            if count == 0:
                return False
            self.end += count
        return True

    def read(self) -> tuple[bytes, Any, bytes] | None:
        """The next frame, or None when the other end has closed."""
        if not self._fill(HEADER.size):
            return None
        tag, meta_size, body_size = HEADER.unpack_from(self.buffer, self.start)
        if not self._fill(HEADER.size + meta_size + body_size):
            return None
        at = self.start + HEADER.size
        meta = json.loads(self.buffer[at : at + meta_size])
        body = bytes(self.view[at + meta_size : at + meta_size + body_size])
        self.start = at + meta_size + body_size
        if self.start == self.end:
            self.start = self.end = 0
        return tag, meta, body


class FrameBuffer:
    """Incremental frame parser for the front end's non-blocking side."""

    def __init__(self) -> None:
        self._data = bytearray()

    def feed(self, data: bytes) -> list[tuple[bytes, Any, bytes]]:
        """Add received bytes; return the frames they complete."""
        if not self._data and len(data) >= HEADER.size:  # the usual case: exactly one whole frame
            tag, meta_size, body_size = HEADER.unpack_from(data)
            if len(data) == HEADER.size + meta_size + body_size:
                end = HEADER.size + meta_size
                return [(tag, json.loads(data[HEADER.size : end]), data[end:])]
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
