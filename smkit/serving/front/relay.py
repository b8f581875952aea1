"""A request on its way through the pool (:class:`Job`), and streamed replies on the front end's side of it:
frames to the recipient, back-pressure, cancel.

A worker streams a reply as ``STRM`` (head and first chunk), ``CHNK`` frames and ``DONE``
(:mod:`smkit.serving.worker.streams`). The pool hands those frames here; the recipient (the front end) gets
``stream_start`` with a :class:`StreamControl`, through which it pauses the worker's socket while the
client's write buffer is full (the worker's writes then block: back-pressure up to the handler) and
cancels the stream when the client is gone.
"""

from __future__ import annotations

import abc
import asyncio
from typing import Any, Protocol

from smkit.serving.wire import ipc, messages
from smkit.serving.wire.reply import Reply

STREAM_TAGS = frozenset({messages.STREAM, messages.CHUNK, messages.DONE})


class Channel(Protocol):
    """The front end's end of one worker's socket."""

    transport: asyncio.Transport | None


class Recipient(Protocol):
    """Who gets a job's reply: the front end, for the request ``token`` stands for.

    A streamed reply comes as ``stream_start`` (head and first chunk), ``stream_chunk`` calls and one
    ``stream_end`` (``error`` None: complete).
    """

    def answer(self, token: Any, reply: Reply, pid: int) -> None: ...

    def stream_start(self, token: Any, reply: Reply, pid: int, control: StreamControl) -> None: ...

    def stream_chunk(self, token: Any, data: bytes) -> None: ...

    def stream_end(self, token: Any, error: str | None) -> None: ...


class Client(Recipient, Protocol):
    """The front end as its features (sessions, adapters) see it: the recipient that answers the client
    a token stands for, and its own process id, which goes with the answers it makes itself."""

    pid: int


class WholeReply(abc.ABC):
    """A recipient that takes a reply whole (a control request of the front end's own): a stream it is
    handed is cancelled at its start, and its head is the answer."""

    @abc.abstractmethod
    def answer(self, token: Any, reply: Reply, pid: int) -> None:
        """The whole reply (of a stream: its head)."""

    def stream_start(self, token: Any, reply: Reply, pid: int, control: StreamControl) -> None:
        control.cancel()
        self.answer(token, reply, pid)

    def stream_chunk(self, token: Any, data: bytes) -> None:
        return None

    def stream_end(self, token: Any, error: str | None) -> None:
        return None


class StreamControl:
    """What the front end may do to a running stream: back-pressure on the worker's socket, cancel."""

    __slots__ = ("job_id", "channel", "paused")

    def __init__(self, job_id: int, channel: Channel) -> None:
        self.job_id = job_id
        self.channel = channel
        self.paused = False

    def pause(self) -> None:
        """The client reads slower than the model writes: stop reading the worker (its writes block)."""
        if not self.paused and self.channel.transport is not None:
            self.paused = True
            self.channel.transport.pause_reading()

    def resume(self) -> None:
        if self.paused and self.channel.transport is not None:
            self.paused = False
            self.channel.transport.resume_reading()

    def send(self, tag: bytes, body: bytes) -> None:
        """A frame about this job to the worker (a bidirectional session's messages)."""
        transport = self.channel.transport
        if transport is not None and not transport.is_closing():
            transport.write(ipc.frame(tag, messages.STREAM_JOB_ID.pack(self.job_id), body))

    def cancel(self) -> None:
        """The client is gone or timed out: drain the worker and tell it to stop the handler."""
        self.resume()
        transport = self.channel.transport
        if transport is not None and not transport.is_closing():
            transport.write(ipc.frame(messages.CANCEL, messages.STREAM_JOB_ID.pack(self.job_id)))


class Job:
    """One request waiting for or running in a worker."""

    __slots__ = ("id", "message", "fd", "token", "recipient", "queued_at", "until", "answered", "control")

    def __init__(
        self,
        job_id: int,
        message: bytes,
        fd: int,
        token: Any,
        recipient: Recipient,
        queued_at: float,
        until: float,
    ) -> None:
        self.id = job_id
        self.message = message  # the job's message on the queue
        self.fd = fd  # the file holding a large body (-1: none), closed once sent
        self.token = token
        self.recipient = recipient
        self.queued_at = queued_at  # arrival, time.monotonic
        self.until = until  # its deadline: arrival + the invocation timeout
        self.answered = False
        self.control: StreamControl | None = None  # set while its reply streams

    def answer(self, reply: Reply, pid: int) -> None:
        if not self.answered:
            self.answered = True
            self.recipient.answer(self.token, reply, pid)

    def fail(self, reply: Reply, pid: int) -> None:
        """Answer with an error; a stream already under way ends with it (the client sees it cut off)."""
        control = self.control
        if control is None:
            self.answer(reply, pid)
            return
        self.control = None
        control.cancel()
        self.recipient.stream_end(self.token, reply.body.decode("utf-8", "replace"))


def stream_frame(jobs: dict[int, Job], channel: Channel, tag: bytes, data: bytes, body: bytes) -> None:
    """Pass one stream frame of ``channel``'s worker on to its job's recipient."""
    if tag == messages.CHUNK:
        job = jobs.get(messages.STREAM_JOB_ID.unpack(data)[0])
        if job is not None and job.control is not None:
            job.recipient.stream_chunk(job.token, body)
    elif tag == messages.STREAM:
        job_id, status, content_type, headers, pid = ipc.parse_reply(data)
        job = jobs.get(job_id)
        if job is None or job.answered:  # answered 504 already: drop the stream, stop the handler
            StreamControl(job_id, channel).cancel()
            return
        job.answered = True
        job.control = StreamControl(job_id, channel)
        reply = Reply(status, body, content_type, headers, timings=ipc.reply_timings(data))
        job.recipient.stream_start(job.token, reply, pid, job.control)
    else:  # DONE
        job = jobs.pop(messages.STREAM_JOB_ID.unpack(data)[0], None)
        if job is not None and job.control is not None:
            job.control.resume()
            job.control = None
            job.recipient.stream_end(job.token, messages.describe_done(body) if body else None)
