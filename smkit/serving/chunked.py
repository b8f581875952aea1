"""A streamed response on one client connection: its state and the chunked transfer-encoding framing.

:class:`~smkit.serving.protocol.FrontEndProtocol` writes a streamed reply (docs/streaming.md) as the head,
then each chunk as it comes (``size in hex CRLF data CRLF``), then the last, empty chunk; after an error
it closes without that last chunk, which every HTTP client reports as an incomplete body. An HTTP/1.0
client has no chunked encoding: its body is the bytes themselves, ended by the close.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from smkit.serving.relay import StreamControl

LAST_CHUNK = b"0\r\n\r\n"


class StreamState:
    """A response being streamed (docs/streaming.md): chunked unless the client speaks HTTP/1.0."""

    __slots__ = ("control", "status", "pid", "chunked", "close", "sent", "chunks", "first_byte", "ended")

    def __init__(self, control: StreamControl, status: int, pid: int, *, chunked: bool, close: bool) -> None:
        self.control = control
        self.status = status
        self.pid = pid
        self.chunked = chunked
        self.close = close
        self.sent = 0  # body bytes written, chunk framing not counted
        self.chunks = 0
        self.first_byte = 0.0  # time.perf_counter() when the head and first chunk were written
        self.ended = False


def framed(data: bytes, chunked: bool) -> list[bytes]:
    """``data`` as one chunk (or as itself without chunked encoding), for ``writelines``."""
    return [b"%x\r\n" % len(data), data, b"\r\n"] if chunked else [data]
