"""Messages between the front end and its model workers (standard library only).

Three channels:

- **The job queue**: one ``SOCK_SEQPACKET`` socketpair. The front end writes requests to one end;
  every worker blocks reading the other, and the kernel gives each message to exactly one reader, in
  order. This *is* the shared FIFO queue: whichever worker is free takes the next request, and a worker
  that finishes while requests wait takes the next one without waiting for the front end. (Each worker
  also has a queue of its own, with the same messages, for requests sent to it alone:
  :mod:`smkit.serving.front.pinning`.) A job message
  is the job id (8 bytes, native order), a 12-byte header (``!4sII``: tag, metadata length, body length),
  the pickled metadata (arrival time, deadline, method, path, raw header pairs, body size) and the body;
  a body over :data:`INLINE_BODY` bytes travels in an anonymous file whose descriptor rides along
  (``SCM_RIGHTS``).
- **One stream socketpair per worker** for frames back to the front end (the same 12-byte header, the
  metadata and the body): ``REDY`` (once: loaded or failed, compact JSON) and ``RPLY`` (a reply: a
  ``!QHIH`` struct of job id, status, worker pid and content-type length, the :data:`TIMINGS` of the
  request's phases in the worker, the content type, then the reply's extra headers as JSON, empty when
  there are none, as for nearly every reply). A streamed reply
  is ``STRM``/``CHNK``/``DONE`` instead, and the front end writes ``CANC`` and ``MESG`` frames the other
  way on the same socket (:mod:`smkit.serving.worker.streams`, :mod:`smkit.serving.worker.bidi`).
- **The scoreboard**: a shared file of one 16-byte slot per worker (:class:`Scoreboard`): which job the
  worker took and which it runs, so the front end knows which worker runs what without a message per
  request.
"""

from __future__ import annotations

import array
import json
import math
import mmap
import os
import pickle
import socket
import struct
import tempfile
from collections.abc import Sequence
from typing import Any

HEADER = struct.Struct("!4sII")
READY = b"REDY"
JOB = b"JOB_"
REPLY = b"RPLY"
REPLY_HEAD = struct.Struct("!QHIH")
# What a worker measured of a request, after REPLY_HEAD (docs/observability.md): seconds it waited in the
# queue, in input_fn, in predict_fn (transform_fn; a batch's predict_batch_fn) and in output_fn (NaN: the
# phase did not run), and the size of the batch it was served in (on the batch's first reply only; 0: none).
TIMINGS = struct.Struct("=ffffH")
Timings = tuple[float, float, float, float, int]
NO_TIMINGS: Timings = (math.nan, math.nan, math.nan, math.nan, 0)
JOB_ID = struct.Struct("=Q")  # first in a job message: received straight into the taker's scoreboard slot
INLINE_BODY = 64 * 1024  # larger bodies go in a file, so a job message always fits the socket buffer
MAX_JOB_MESSAGE = 256 * 1024  # header + metadata (request heads are bounded to 64 KiB) + inline body
_FD = array.array("i", [0]).itemsize
_IOV_MAX = 1024  # parts one writev call takes (IOV_MAX on Linux and macOS)
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
RawHeaders = list[tuple[bytes, bytes]]
JobMeta = tuple[int, float, float, str, str, RawHeaders]


def encode_json(meta: Any) -> bytes:
    """Metadata of ``REDY`` frames."""
    return _dumps(meta).encode()


def frame(tag: bytes, meta: bytes, body: bytes = b"") -> bytes:
    """One frame's bytes (``meta`` already encoded)."""
    return HEADER.pack(tag, len(meta), len(body)) + meta + body


def job_message(
    job_id: int,
    queued_at: float,
    until: float,
    method: str,
    path: str,
    headers: RawHeaders,
    body: Sequence[bytes],
) -> tuple[bytes, int]:
    """A job's message and the descriptor of the file holding its body (-1: the body is inline).

    ``body`` is the request body in the parts it arrived in: a large one goes into the file part by
    part, never joined in memory first. ``queued_at`` and ``until`` (the job's deadline) are on the
    ``time.monotonic`` clock, which is one clock for every process of the machine.
    """
    head = JOB_ID.pack(job_id)
    size = sum(len(part) for part in body)
    meta = pickle.dumps((queued_at, until, method, path, headers, -1), protocol=5)
    if len(meta) + size <= INLINE_BODY:
        return head + frame(JOB, meta, b"".join(body)), -1
    fd = _body_file(body)
    meta = pickle.dumps((queued_at, until, method, path, headers, size), protocol=5)
    return head + frame(JOB, meta), fd


def _body_file(parts: Sequence[bytes]) -> int:
    memfd = getattr(os, "memfd_create", None)
    if memfd is not None:
        fd: int = memfd("smkit-body", os.MFD_CLOEXEC)
    else:  # not Linux: an unlinked temporary file
        fd = _anonymous_file()
    views = [memoryview(part) for part in parts if part]
    at = 0
    while at < len(views):  # writev takes at most IOV_MAX parts and may write fewer bytes than given
        written = os.writev(fd, views[at : at + _IOV_MAX])
        while at < len(views) and written >= len(views[at]):
            written -= len(views[at])
            at += 1
        if written:
            views[at] = views[at][written:]
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
    """A worker's end of the job queue: blocking reads into one reusable buffer.

    ``landing`` is the worker's ``taken`` word in the scoreboard: the kernel writes each message's job id
    there in the same ``recvmsg`` call that takes the message off the queue, so no moment exists in which
    this worker holds a job the front end cannot attribute to it (a worker killed right after the call
    still has the job in its slot).
    """

    def __init__(self, sock: socket.socket, landing: memoryview) -> None:
        self.sock = sock
        self.landing = landing
        self.buffer = bytearray(MAX_JOB_MESSAGE)
        self.view = memoryview(self.buffer)
        self.ancillary = socket.CMSG_SPACE(_FD)

    def read(self, landing: memoryview | None = None, flags: int = 0) -> tuple[JobMeta, bytes] | None:
        """The next job's ``(id, queued_at, until, method, path, headers)`` and body; None when the queue closes.

        ``landing``: where this job's id goes instead (a batch's further jobs, :mod:`smkit.serving.worker.batching`);
        ``flags``: ``socket.MSG_DONTWAIT`` raises BlockingIOError when no job is waiting.
        """
        landing = self.landing if landing is None else landing
        size, ancillary, flags, _ = self.sock.recvmsg_into([landing, self.view], self.ancillary, flags)
        fds = _received_fds(ancillary)
        if size == 0 and not fds:
            return None
        if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            for fd in fds:
                os.close(fd)
            raise OSError(f"a job message was cut short (flags {flags:#x}, {size} bytes)")
        (job_id,) = JOB_ID.unpack(landing)
        _, meta_size, body_size = HEADER.unpack_from(self.buffer)
        at = HEADER.size + meta_size
        queued_at, until, method, path, headers, file_size = pickle.loads(self.view[HEADER.size : at])
        body = bytes(self.view[at : at + body_size]) if file_size < 0 else _read_file(fds[0], file_size)
        for fd in fds:
            os.close(fd)
        return (job_id, queued_at, until, method, path, headers), body


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


def reply_meta(
    job_id: int,
    status: int,
    content_type: str,
    headers: dict[str, str],
    pid: int,
    timings: Timings = NO_TIMINGS,
) -> bytes:
    """Metadata of a ``RPLY`` frame (also a stream's ``STRM`` head)."""
    kind = content_type.encode("utf-8", "surrogatepass")
    extra = _dumps(headers).encode("utf-8", "surrogatepass") if headers else b""
    return REPLY_HEAD.pack(job_id, status, pid, len(kind)) + TIMINGS.pack(*timings) + kind + extra


_KIND_AT = REPLY_HEAD.size + TIMINGS.size


def parse_reply(meta: bytes) -> tuple[int, int, str, dict[str, str], int]:
    """``(job id, status, content type, headers, worker pid)`` of a ``RPLY`` frame."""
    job_id, status, pid, size = REPLY_HEAD.unpack_from(meta)
    end = _KIND_AT + size
    content_type = meta[_KIND_AT:end].decode("utf-8", "surrogatepass")
    headers = json.loads(meta[end:]) if len(meta) > end else {}
    return job_id, status, content_type, headers, pid


def worker_timings(
    waited: float, phases: tuple[float, float, float, float, int] | None, batch: int = 0
) -> Timings:
    """A reply's :data:`TIMINGS`: the queue wait, the phases the handler measured, the batch size."""
    if phases is None:
        return (waited, math.nan, math.nan, math.nan, batch)
    return (waited, phases[1], phases[2], phases[3], batch)


def reply_timings(meta: bytes) -> Timings:
    """The :data:`TIMINGS` of a ``RPLY`` (or ``STRM``) frame."""
    return TIMINGS.unpack_from(meta, REPLY_HEAD.size)


def send_frame(sock: socket.socket, tag: bytes, meta: bytes, body: bytes = b"") -> None:
    """Write one frame on a blocking socket (the header and metadata and the body in one call)."""
    head = HEADER.pack(tag, len(meta), len(body)) + meta
    sent = sock.sendmsg([head, body])
    if sent < len(head):  # a send cut short by a signal
        sock.sendall(head[sent:])
        sent = len(head)
    if sent - len(head) < len(body):  # a body larger than the socket's buffer: the rest, not copied
        sock.sendall(memoryview(body)[sent - len(head) :])


class Scoreboard:
    """Two 64-bit words per worker slot, in a file shared by the front end and every worker.

    - ``taken``: the id of the last job the worker took off the queue, written by the kernel during the
      ``recvmsg`` that takes it (:class:`JobReader`) and set to 0 by the worker once the reply is sent. The
      front end reads it only after the worker has exited (``waitpid``), which orders every write of the
      dead process before the read: the job a dead worker held is always known, on any CPU.
    - ``running``: the job the worker is running (low 40 bits; 0: none) and the seconds its deadline was
      extended by model loads (high 24 bits; all ones: no deadline, a bidirectional session), written by
      the worker, read live by the front end's sweep.

    Memory ordering: the sweep needs nothing but ``running``, one naturally aligned 64-bit word written
    and read by single 64-bit accesses (a ``memoryview`` cast to ``Q``, never byte-wise ``struct``
    packing). Both x86-64 and ARMv8 (Graviton) make such an access single-copy atomic, so a reader sees
    the old or the new value, never a mix; there is no second word whose order relative to this one
    could be observed differently on a weakly ordered CPU (the deadline itself lives in the front end's
    own record of the job). A stale read costs at most one sweep interval.
    """

    SLOT = 16
    JOB_BITS = 40
    JOB_MASK = (1 << JOB_BITS) - 1
    UNBOUNDED = (1 << (64 - JOB_BITS)) - 1  # the extension that means "no deadline"

    def __init__(self, fd: int, slots: int, batch: int = 1) -> None:
        self.fd = fd
        self.slots = max(1, slots)
        self.extra = max(1, batch) - 1  # further ``taken`` words per slot: a batch's other jobs
        self.map = mmap.mmap(fd, self.size(slots, batch))
        self.words = memoryview(self.map).cast("Q")

    @classmethod
    def size(cls, slots: int, batch: int = 1) -> int:
        """Bytes of a scoreboard: the slots, then ``batch - 1`` more ``taken`` words per slot."""
        return max(1, slots) * (cls.SLOT + (max(1, batch) - 1) * JOB_ID.size)

    @classmethod
    def create(cls, slots: int, batch: int = 1) -> Scoreboard:
        """A new, zeroed scoreboard in an anonymous file (its ``fd`` is passed to the workers).

        ``batch`` (``SAGEMAKER_TS_BATCH_SIZE``): jobs one worker may hold at once, each recorded the same way.
        """
        fd = _anonymous_file()
        os.ftruncate(fd, cls.size(slots, batch))
        return cls(fd, slots, batch)

    def _extra_word(self, slot: int, index: int) -> int:
        return 2 * self.slots + slot * self.extra + index - 1

    def landing(self, slot: int, index: int = 0) -> memoryview:
        """The ``taken`` word's bytes, for :class:`JobReader` to receive job ids into (``index`` > 0: the
        word of a batch's further job)."""
        word = slot * 2 if index == 0 else self._extra_word(slot, index)
        at = word * JOB_ID.size
        return memoryview(self.map)[at : at + JOB_ID.size]

    def held(self, slot: int) -> list[int]:
        """The further jobs of a batch the worker holds (besides :meth:`taken`'s)."""
        first = self._extra_word(slot, 1)
        return [w & self.JOB_MASK for w in self.words[first : first + self.extra] if w]

    def hold(self, slot: int, job_id: int) -> None:
        """The worker's next job is ``job_id`` (one it took while forming a batch): its ``taken`` word."""
        self.words[slot * 2] = job_id

    def run(self, slot: int, job_id: int) -> None:
        """The worker starts running ``job_id`` (ids wrap at 2**40, far beyond any server's lifetime)."""
        self.words[slot * 2 + 1] = job_id & self.JOB_MASK

    def extend(self, slot: int, seconds: float) -> None:
        """Give the running job ``seconds`` more (a model load inside a request; ``math.inf``: no deadline
        any more, a bidirectional session)."""
        word = self.words[slot * 2 + 1]
        extra = min((word >> self.JOB_BITS) + math.ceil(min(seconds, self.UNBOUNDED)), self.UNBOUNDED)
        self.words[slot * 2 + 1] = (extra << self.JOB_BITS) | (word & self.JOB_MASK)

    def finish(self, slot: int) -> None:
        """The reply is sent: the worker runs and holds nothing."""
        self.words[slot * 2 + 1] = 0
        self.words[slot * 2] = 0
        self._clear_extra(slot)

    def finish_batch(self, slot: int, keep: int = 0) -> None:
        """A batch's replies are sent: the worker holds ``keep`` (a job it took but did not batch) or nothing.

        ``keep`` is written before the other words are cleared: no moment exists in which it is unrecorded.
        """
        self.words[slot * 2] = keep
        self.words[slot * 2 + 1] = 0
        self._clear_extra(slot)

    def _clear_extra(self, slot: int) -> None:
        if self.extra:
            first = self._extra_word(slot, 1)
            for word in range(first, first + self.extra):
                self.words[word] = 0

    def running(self, slot: int) -> tuple[int, float]:
        """``(job id, extension seconds)`` of the job the worker runs; job id 0 when it runs nothing."""
        word = self.words[slot * 2 + 1]
        extra = word >> self.JOB_BITS
        return word & self.JOB_MASK, math.inf if extra == self.UNBOUNDED else float(extra)

    def taken(self, slot: int) -> int:
        """The job a worker held; read only once the worker has exited."""
        return int(self.words[slot * 2]) & self.JOB_MASK

    def clear(self, slot: int) -> None:
        """Reset a dead worker's slot before its replacement starts."""
        self.words[slot * 2] = 0
        self.words[slot * 2 + 1] = 0
        self._clear_extra(slot)


class FrameReceiver:
    """Frames read from a stream socket with the bytes landing in place: the front end's end of a worker's
    socket (through ``asyncio.BufferedProtocol``) and a worker's end (:meth:`receive`).

    Small frames arrive in one reusable buffer and are copied out. A frame larger than that buffer (a
    large reply: a request's answer is often as large as its request) gets a buffer of its own for its
    metadata and one for its body, allocated once its header is read, and the socket is read straight
    into them: the body reaches the HTTP response without being copied again, and the worker is never
    slowed by the front end joining pieces of it.
    """

    SCRATCH = 256 * 1024

    def __init__(self) -> None:
        self._scratch = bytearray(self.SCRATCH)
        self._filled = 0
        # A large frame being read: its tag, metadata buffer, body buffer and bytes received so far.
        self._large: tuple[bytes, bytearray, bytearray] | None = None
        self._got = 0

    def close(self) -> None:
        """The socket is gone: free the buffers now (the worker's record may live on a while)."""
        self._scratch = bytearray()
        self._filled = 0
        self._large = None

    def get_buffer(self) -> memoryview:
        """Where the next read goes (never empty)."""
        if self._large is not None:
            _, meta, body = self._large
            if self._got < len(meta):
                return memoryview(meta)[self._got :]
            return memoryview(body)[self._got - len(meta) :]
        return memoryview(self._scratch)[self._filled :]

    def receive(self, sock: socket.socket, flags: int = 0) -> list[tuple[bytes, bytes, bytes]] | None:
        """One read of ``sock`` (BlockingIOError on a non-blocking socket with nothing to read): the frames
        it completes, None when the other end has closed the socket."""
        count = sock.recv_into(self.get_buffer(), 0, flags)
        return None if count == 0 else self.updated(count)

    def updated(self, count: int) -> list[tuple[bytes, bytes, bytes]]:
        """``count`` bytes were read into :meth:`get_buffer`; return the frames they complete."""
        if self._large is not None:
            self._got += count
            tag, meta, body = self._large
            if self._got < len(meta) + len(body):
                return []
            self._large = None
            return [(tag, bytes(meta), body)]  # type: ignore[list-item]  # the body as read (a bytearray): no copy
        self._filled += count
        frames: list[tuple[bytes, bytes, bytes]] = []
        data = self._scratch
        at = 0
        while self._filled - at >= HEADER.size:
            tag, meta_size, body_size = HEADER.unpack_from(data, at)
            start = at + HEADER.size
            end = start + meta_size + body_size
            if end - at > self.SCRATCH:  # larger than the scratch buffer: give it buffers of its own
                meta, body = bytearray(meta_size), bytearray(body_size)
                have = memoryview(data)[start : self._filled]
                head, rest = have[:meta_size], have[meta_size:]
                meta[: len(head)], body[: len(rest)] = head, rest
                self._large, self._got = (tag, meta, body), len(have)
                self._filled = 0
                return frames
            if end > self._filled:
                break
            frames.append((tag, bytes(data[start : start + meta_size]), bytes(data[start + meta_size : end])))
            at = end
        if at:
            left = self._filled - at
            data[:left] = data[at : self._filled]
            self._filled = left
        return frames
