"""Bounded request heads: AWS's HTTP header limits, counted while llhttp parses.

llhttp (httptools) buffers a request line and header fields until they are complete and puts no bound on
them, so a client could make a server hold megabytes of head. AWS documents the limits of its HTTP front
doors for Application Load Balancers: request line 16 KiB, a single header 16 KiB, the entire request
header 64 KiB; a request over any of them is answered 400 Bad Request
(https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-limits.html#http-headers-quotas,
https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-troubleshooting.html#http-400-issues).
AWS documents no bound on the number of fields; :data:`ALB_LIMITS` adds gunicorn's 100.

:class:`HeadBounds` is the one implementation, used by :class:`~smkit.http1.protocol.HTTP1Protocol` for
the serving container and the local gateway alike: it counts the parsed target and fields, and the bytes
read while a head is unfinished, and raises :class:`HeadTooLarge` with a message naming the field, its
size, the limit and the fix. How the refusal is answered (its body shape) is the server's choice
(:data:`~smkit.http1.protocol.Refusal`).
"""

from __future__ import annotations

from dataclasses import dataclass

FIX = "send large data in the body, not in headers or the URL"


@dataclass(frozen=True)
class HeadLimits:
    """The bounds of one request head, in bytes (a field counts ``name: value`` and its CRLF)."""

    request_line: int = 16 * 1024
    header_field: int = 16 * 1024
    headers: int = 64 * 1024
    fields: int = 100

    @property
    def unfinished(self) -> int:
        """Bytes read while a head is still unfinished beyond which it cannot fit: line plus headers."""
        return self.request_line + self.headers


ALB_LIMITS = HeadLimits()


class HeadTooLarge(Exception):
    """A request head over its limits; the message is what the client is told."""


class HeadBounds:
    """The counters of one connection's current request head (reset at each message's start)."""

    __slots__ = ("limits", "in_head", "read", "target", "fields", "field_bytes")

    def __init__(self, limits: HeadLimits = ALB_LIMITS) -> None:
        self.limits = limits
        self.in_head = True  # between the end of one message and the end of the next one's headers
        self.read = 0  # bytes read while in the head (what llhttp may be buffering)
        self.target = 0
        self.fields = 0
        self.field_bytes = 0

    def begin(self) -> None:
        """A message starts."""
        self.target = self.fields = self.field_bytes = 0

    def url(self, size: int) -> None:
        """The request target has reached ``size`` bytes (llhttp may deliver it in pieces)."""
        self.target = size
        if size > self.limits.request_line:
            raise HeadTooLarge(f"Request line over {self.limits.request_line} bytes (the URL is); {FIX}.")

    def header(self, name: bytes, value: bytes) -> None:
        """One header field was parsed."""
        limits = self.limits
        self.fields += 1
        field = len(name) + len(value) + 4
        self.field_bytes += field
        if field > limits.header_field:
            raise HeadTooLarge(
                f"Request header {_shown(name)} is {field} bytes, over the {limits.header_field}-byte limit "
                f"of one header; {FIX}."
            )
        if self.field_bytes > limits.headers:  # a whole head that arrived in a single read
            raise HeadTooLarge(
                f"Request headers over {limits.headers} bytes in all (at {_shown(name)}); {FIX}."
            )
        if self.fields > limits.fields:
            raise HeadTooLarge(
                f"More than {limits.fields} request header fields (at {_shown(name)}); send fewer."
            )

    def headers_complete(self) -> None:
        self.in_head = False
        self.read = 0

    def message_complete(self) -> None:
        self.in_head = True

    def unfinished(self) -> str | None:
        """After a read was parsed: why the head still unfinished cannot fit, or None.

        Counted after parsing: one read may hold a whole head and the start of a large body, which is no
        head over its limit.
        """
        limits = self.limits
        if self.in_head and self.read > limits.unfinished:
            return (
                f"Request head over {limits.unfinished} bytes and not finished (limits: request line "
                f"{limits.request_line}, headers {limits.headers}); {FIX}."
            )
        return None


def _shown(name: bytes) -> str:
    return name.decode("latin-1")[:64]
