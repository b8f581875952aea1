"""A streamed response's record on the front end: the worker stream feeding it, for control and the log.

The server (:mod:`smkit.http1`) writes a streamed reply (docs/streaming.md) as the head, then each chunk
as it comes (chunked transfer-encoding; for an HTTP/1.0 client the bytes themselves, ended by the close),
then the last, empty chunk; after an error it closes without that last chunk, which every HTTP client
reports as an incomplete body. It pauses :attr:`StreamState.control` while the client's connection is
full, so back-pressure reaches the worker's handler.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smkit.serving.front.relay import StreamControl


class StreamState:
    """A response being streamed (docs/streaming.md), kept as the request's ``app`` data."""

    __slots__ = ("control", "status", "pid", "chunks", "first_byte", "timings")

    def __init__(self, control: StreamControl, status: int, pid: int) -> None:
        self.control = control
        self.status = status
        self.pid = pid
        self.chunks = 0
        self.first_byte = 0.0  # time.perf_counter() when the head and first chunk were written
        self.timings: Any = None  # the worker's measurements (smkit.serving.wire.ipc.TIMINGS)
