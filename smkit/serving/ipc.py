"""Frames between the front end and its model workers (standard library only).

One frame is a 12-byte header (``!4sII``: a tag, the metadata length, the body length), the metadata and
the body bytes as they are. Both processes hold one end of a socketpair per worker. Tags: ``REDY``
(worker -> front end, once: loaded or failed) and ``XTND`` (worker -> front end: a model load started,
the job may take the load's time limit) carry compact JSON; the two frames of every request carry
metadata that costs a few microseconds less per request than JSON: ``JOB_`` (a request: its method,
path and raw header pairs, pickled by the front end for its own worker) and ``RPLY`` (its reply: a
``!HIH`` struct of status, worker pid and content-type length, the content type, then the reply's extra
headers as JSON, empty when there are none, as for nearly every reply).
"""

from __future__ import annotations

import json
import pickle
import socket
import struct
from typing import Any

HEADER = struct.Struct("!4sII")
READY = b"REDY"
JOB = b"JOB_"
REPLY = b"RPLY"
EXTEND = b"XTND"
REPLY_HEAD = struct.Struct("!HIH")
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
RawHeaders = list[tuple[bytes, bytes]]


def encode_json(meta: Any) -> bytes:
    """Metadata of ``REDY`` and ``XTND`` frames."""
    return _dumps(meta).encode()


def frame(tag: bytes, meta: bytes, body: bytes = b"") -> bytes:
    """One frame's bytes (``meta`` already encoded)."""
    return HEADER.pack(tag, len(meta), len(body)) + meta + body


def job_frame(method: str, path: str, headers: RawHeaders, body: bytes) -> bytes:
    """A ``JOB_`` frame: the request as the front end read it (headers as ASGI's byte pairs)."""
    return frame(JOB, pickle.dumps((method, path, headers), protocol=5), body)


def parse_job(meta: bytes) -> tuple[str, str, RawHeaders]:
    """``(method, path, raw headers)`` of a ``JOB_`` frame (written by this worker's own front end)."""
    method, path, headers = pickle.loads(meta)
    return method, path, headers


def reply_meta(status: int, content_type: str, headers: dict[str, str], pid: int) -> bytes:
    """Metadata of a ``RPLY`` frame."""
    kind = content_type.encode("utf-8", "surrogatepass")
    extra = _dumps(headers).encode("utf-8", "surrogatepass") if headers else b""
    return REPLY_HEAD.pack(status, pid, len(kind)) + kind + extra


def parse_reply(meta: bytes) -> tuple[int, str, dict[str, str], int]:
    """``(status, content type, headers, worker pid)`` of a ``RPLY`` frame."""
    status, pid, size = REPLY_HEAD.unpack_from(meta)
    end = REPLY_HEAD.size + size
    content_type = meta[REPLY_HEAD.size : end].decode("utf-8", "surrogatepass")
    headers = json.loads(meta[end:]) if len(meta) > end else {}
    return status, content_type, headers, pid


def send_frame(sock: socket.socket, tag: bytes, meta: bytes, body: bytes = b"") -> None:
    """Write one frame on a blocking socket (the header and metadata and the body in one call)."""
    head = HEADER.pack(tag, len(meta), len(body)) + meta
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

    def read(self) -> tuple[bytes, bytes, bytes] | None:
        """The next frame, or None when the other end has closed."""
        if not self._fill(HEADER.size):
            return None
        tag, meta_size, body_size = HEADER.unpack_from(self.buffer, self.start)
        if not self._fill(HEADER.size + meta_size + body_size):
            return None
        at = self.start + HEADER.size
        meta = bytes(self.view[at : at + meta_size])
        body = bytes(self.view[at + meta_size : at + meta_size + body_size])
        self.start = at + meta_size + body_size
        if self.start == self.end:
            self.start = self.end = 0
        return tag, meta, body


class FrameBuffer:
    """Incremental frame parser for the front end's non-blocking side."""

    def __init__(self) -> None:
        self._data = bytearray()

    def feed(self, data: bytes) -> list[tuple[bytes, bytes, bytes]]:
        """Add received bytes; return the frames they complete."""
        if not self._data and len(data) >= HEADER.size:  # the usual case: exactly one whole frame
            tag, meta_size, body_size = HEADER.unpack_from(data)
            if len(data) == HEADER.size + meta_size + body_size:
                end = HEADER.size + meta_size
                return [(tag, data[HEADER.size : end], data[end:])]
        self._data += data
        frames = []
        while len(self._data) >= HEADER.size:
            tag, meta_size, body_size = HEADER.unpack_from(self._data)
            end = HEADER.size + meta_size + body_size
            if len(self._data) < end:
                break
            meta = bytes(self._data[HEADER.size : HEADER.size + meta_size])
            body = bytes(self._data[HEADER.size + meta_size : end])
            del self._data[:end]
            frames.append((tag, meta, body))
        return frames
