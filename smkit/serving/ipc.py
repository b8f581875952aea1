"""Messages between the front end and its model workers (standard library only).

Three channels:

- **The job queue**: one ``SOCK_SEQPACKET`` socketpair. The front end writes every request to one end;
  every worker blocks reading the other, and the kernel gives each message to exactly one reader, in
  order. This *is* the shared FIFO queue: whichever worker is free takes the next request, and a worker
  that finishes while requests wait takes the next one without waiting for the front end. A job message
  is a 12-byte header (``!4sII``: tag, metadata length, body length), the pickled metadata (job id,
  enqueue time, method, path, raw header pairs, body size) and the body; a body over
  :data:`INLINE_BODY` bytes travels in an anonymous file whose descriptor rides along (``SCM_RIGHTS``).
- **One stream socketpair per worker** for frames back to the front end (the same 12-byte header, the
  metadata and the body): ``REDY`` (once: loaded or failed, compact JSON) and ``RPLY`` (a reply: a
  ``!QHIH`` struct of job id, status, worker pid and content-type length, the content type, then the
  reply's extra headers as JSON, empty when there are none, as for nearly every reply). A streamed reply
  is ``STRM``/``CHNK``/``DONE`` instead, and the front end writes ``CANC`` and ``MESG`` frames the other
  way on the same socket (:mod:`smkit.serving.streams`, :mod:`smkit.serving.bidi`).
- **The scoreboard**: a shared file of one 16-byte slot per worker (job id, deadline on the
  ``time.monotonic`` clock), written by the worker when it takes and finishes a job and read by the front
  end's deadline sweep: no message per request for the front end to know which worker runs what.
"""

from __future__ import annotations

import array
import json
import mmap
import os
import pickle
import socket
import struct
import tempfile
from typing import Any

HEADER = struct.Struct("!4sII")
READY = b"REDY"
JOB = b"JOB_"
REPLY = b"RPLY"
REPLY_HEAD = struct.Struct("!QHIH")
INLINE_BODY = 64 * 1024  # larger bodies go in a file, so a job message always fits the socket buffer
MAX_JOB_MESSAGE = 256 * 1024  # header + metadata (request heads are bounded to 64 KiB) + inline body
_FD = array.array("i", [0]).itemsize
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
RawHeaders = list[tuple[bytes, bytes]]
JobMeta = tuple[int, float, str, str, RawHeaders]


def encode_json(meta: Any) -> bytes:
    """Metadata of ``REDY`` frames."""
    return _dumps(meta).encode()


def frame(tag: bytes, meta: bytes, body: bytes = b"") -> bytes:
    """One frame's bytes (``meta`` already encoded)."""
    return HEADER.pack(tag, len(meta), len(body)) + meta + body


def job_message(
    job_id: int, queued_at: float, method: str, path: str, headers: RawHeaders, body: bytes
) -> tuple[bytes, int]:
    """A job's message and the descriptor of the file holding its body (-1: the body is inline)."""
    meta = pickle.dumps((job_id, queued_at, method, path, headers, -1), protocol=5)
    if len(meta) + len(body) <= INLINE_BODY:
        return frame(JOB, meta, body), -1
    fd = _body_file(body)
    meta = pickle.dumps((job_id, queued_at, method, path, headers, len(body)), protocol=5)
    return frame(JOB, meta), fd


def _body_file(body: bytes) -> int:
    memfd = getattr(os, "memfd_create", None)
    if memfd is not None:
        fd: int = memfd("smkit-body", os.MFD_CLOEXEC)
    else:  # not Linux: an unlinked temporary file
        fd = _anonymous_file()
    view = memoryview(body)
    while view:
        view = view[os.write(fd, view) :]
    return fd


def _anonymous_file() -> int:
    """A descriptor of a new temporary file that has no name."""
    with tempfile.TemporaryFile() as handle:
        return os.dup(handle.fileno())


def send_job(sock: socket.socket, message: bytes, fd: int) -> None:
    """Put one job on the queue (non-blocking: BlockingIOError when the queue's buffer is full)."""
    if fd < 0:
        sock.send(message)
    else:
        sock.sendmsg([message], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])


class JobReader:
    """A worker's end of the job queue: blocking reads into one reusable buffer."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray(MAX_JOB_MESSAGE)
        self.view = memoryview(self.buffer)
        self.ancillary = socket.CMSG_SPACE(_FD)

    def read(self) -> tuple[JobMeta, bytes] | None:
        """The next job's ``(id, queued_at, method, path, headers)`` and body; None when the queue is closed."""
        size, ancillary, flags, _ = self.sock.recvmsg_into([self.view], self.ancillary)
        fds = _received_fds(ancillary)
        if size == 0 and not fds:
            return None
        if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            for fd in fds:
                os.close(fd)
            raise OSError(f"a job message was cut short (flags {flags:#x}, {size} bytes)")
        _, meta_size, body_size = HEADER.unpack_from(self.buffer)
        at = HEADER.size + meta_size
        job_id, queued_at, method, path, headers, file_size = pickle.loads(self.view[HEADER.size : at])
        body = bytes(self.view[at : at + body_size]) if file_size < 0 else _read_file(fds[0], file_size)
        for fd in fds:
            os.close(fd)
        return (job_id, queued_at, method, path, headers), body


def _received_fds(ancillary: list[tuple[int, int, bytes]]) -> list[int]:
    fds: list[int] = []
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.extend(array.array("i", data[: len(data) - len(data) % _FD]))
    return fds


def _read_file(fd: int, size: int) -> bytes:
    parts = []
    done = 0
    while done < size:
        part = os.pread(fd, size - done, done)
        if not part:
            raise OSError(f"a job's body file ended at {done} of {size} bytes")
        parts.append(part)
        done += len(part)
    return b"".join(parts)


def reply_meta(job_id: int, status: int, content_type: str, headers: dict[str, str], pid: int) -> bytes:
    """Metadata of a ``RPLY`` frame."""
    kind = content_type.encode("utf-8", "surrogatepass")
    extra = _dumps(headers).encode("utf-8", "surrogatepass") if headers else b""
    return REPLY_HEAD.pack(job_id, status, pid, len(kind)) + kind + extra


def parse_reply(meta: bytes) -> tuple[int, int, str, dict[str, str], int]:
    """``(job id, status, content type, headers, worker pid)`` of a ``RPLY`` frame."""
    job_id, status, pid, size = REPLY_HEAD.unpack_from(meta)
    end = REPLY_HEAD.size + size
    content_type = meta[REPLY_HEAD.size : end].decode("utf-8", "surrogatepass")
    headers = json.loads(meta[end:]) if len(meta) > end else {}
    return job_id, status, content_type, headers, pid


def send_frame(sock: socket.socket, tag: bytes, meta: bytes, body: bytes = b"") -> None:
    """Write one frame on a blocking socket (the header and metadata and the body in one call)."""
    head = HEADER.pack(tag, len(meta), len(body)) + meta
    sent = sock.sendmsg([head, body])
    if sent < len(head) + len(body):  # a large body, or a send cut short by a signal
        sock.sendall((head + body)[sent:])


class Scoreboard:
    """One slot per worker: the job it runs and when that job's time is up (0: no job).

    The worker writes the deadline before the job id and the front end reads the id before the deadline,
    so a reader that sees a job id sees that job's deadline.
    """

    SLOT = struct.Struct("=dQ")

    def __init__(self, fd: int, slots: int) -> None:
        self.fd = fd
        self.map = mmap.mmap(fd, max(1, slots) * self.SLOT.size)

    @classmethod
    def create(cls, slots: int) -> Scoreboard:
        """A new, zeroed scoreboard in an anonymous file (its ``fd`` is passed to the workers)."""
        fd = _anonymous_file()
        os.ftruncate(fd, max(1, slots) * cls.SLOT.size)
        return cls(fd, slots)

    def start(self, slot: int, job_id: int, deadline: float) -> None:
        at = slot * self.SLOT.size
        struct.pack_into("=d", self.map, at, deadline)
        struct.pack_into("=Q", self.map, at + 8, job_id)

    def extend(self, slot: int, seconds: float) -> None:
        """Give the running job ``seconds`` more (a model load inside a request)."""
        at = slot * self.SLOT.size
        (deadline,) = struct.unpack_from("=d", self.map, at)
        struct.pack_into("=d", self.map, at, deadline + seconds)

    def finish(self, slot: int) -> None:
        struct.pack_into("=Q", self.map, slot * self.SLOT.size + 8, 0)

    def read(self, slot: int) -> tuple[int, float]:
        """``(job id, deadline)``; job id 0 when the worker runs nothing."""
        at = slot * self.SLOT.size
        (job_id,) = struct.unpack_from("=Q", self.map, at + 8)
        (deadline,) = struct.unpack_from("=d", self.map, at)
        return job_id, deadline


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
