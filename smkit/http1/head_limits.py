"""Bounded request heads: AWS's HTTP header limits, counted while llhttp parses.

llhttp (httptools) buffers a request line and header fields until they are complete and puts no bound on
them, so a client could make a server hold megabytes of head. AWS documents the limits of its HTTP front
doors for Application Load Balancers: request line 16 KiB, a single header 16 KiB, the entire request
header 64 KiB; a request over any of them is answered 400 Bad Request
(https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-limits.html#http-headers-quotas,
https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-troubleshooting.html#http-400-issues).
AWS documents no bound on the number of fields; :data:`ALB_LIMITS` adds gunicorn's 100.

:class:`HeadBounds` is the one implementation, used by :class:`~smkit.http1.connection.HTTP1Protocol` for
the serving container and the local gateway alike: it holds the bounds the parser compares as it goes (the
target, each field, the bytes read while a head is unfinished), checks the number and total size of the
fields when a head ends, and makes each :class:`HeadTooLarge` with a message naming the field, its size,
the limit and the fix. How the refusal is answered (its body shape) is the server's choice
(:data:`~smkit.http1.connection.Refusal`).
"""

from __future__ import annotations

from dataclasses import dataclass

from smkit.aws.limits import ALB_HEADER_FIELD, ALB_REQUEST_HEADERS, ALB_REQUEST_LINE

FIX = "send large data in the body, not in headers or the URL"


@dataclass(frozen=True)
class HeadLimits:
    """The bounds of one request head, in bytes (a field counts ``name: value`` and its CRLF)."""

    request_line: int = ALB_REQUEST_LINE
    header_field: int = ALB_HEADER_FIELD
    headers: int = ALB_REQUEST_HEADERS
    fields: int = 100

    @property
    def unfinished(self) -> int:
        """Bytes read while a head is still unfinished beyond which it cannot fit: line plus headers."""
        return self.request_line + self.headers


ALB_LIMITS = HeadLimits()


class HeadTooLarge(Exception):
    """A request head over its limits; the message is what the client is told."""


class HeadBounds:
    """The bounds of one connection's request heads: what the parser compares as it goes, and the refusals.

    The server calls into this only when a bound is crossed or a head ends; the per-field and per-read
    comparisons are plain attribute reads in the parser's callbacks (they run for every request relayed).
    """

    __slots__ = ("limits", "in_head", "read", "line_room", "field_room", "unfinished_room")

    def __init__(self, limits: HeadLimits = ALB_LIMITS) -> None:
        self.limits = limits
        self.in_head = True  # between the end of one message and the end of the next one's headers
        self.read = 0  # bytes read while in the head (what llhttp may be buffering)
        self.line_room = limits.request_line  # the most bytes of a request target
        self.field_room = limits.header_field - 4  # of a field's name and value (the limit counts ": ", CRLF)
        self.unfinished_room = limits.unfinished  # read while a head is unfinished

    def line_too_large(self) -> HeadTooLarge:
        """The refusal of a request target longer than :attr:`line_room` (llhttp may deliver it in pieces:
        the parser compares the whole)."""
        return HeadTooLarge(f"Request line over {self.limits.request_line} bytes (the URL is); {FIX}.")

    def field_too_large(self, name: bytes, value: bytes) -> HeadTooLarge:
        """The refusal of one field longer than :attr:`field_room`."""
        size = len(name) + len(value) + 4
        return HeadTooLarge(
            f"Request header {_shown(name)} is {size} bytes, over the {self.limits.header_field}-byte limit "
            f"of one header; {FIX}."
        )

    def headers_complete(self, fields: list[tuple[bytes, bytes]], size: int) -> None:
        """The head's ``fields`` (names lower-case; ``size`` bytes of names and values) are all parsed:
        their number and their bytes in all are checked.

        Checked once here, not per field (the server relays every request's head, so this runs per
        request): while a head is still arriving, the bytes read are held within :attr:`unfinished_room`
        after every read, so a per-field count would hold no less. The message names the field at which the
        bound was crossed.
        """
        self.in_head = False
        self.read = 0
        limits = self.limits
        if len(fields) > limits.fields:
            name = fields[limits.fields][0]
            raise HeadTooLarge(
                f"More than {limits.fields} request header fields (at {_shown(name)}); send fewer."
            )
        if size + 4 * len(fields) > limits.headers:
            room = limits.headers
            for name, value in fields:
                room -= len(name) + len(value) + 4
                if room < 0:
                    raise HeadTooLarge(
                        f"Request headers over {limits.headers} bytes in all (at {_shown(name)}); {FIX}."
                    )

    def unfinished_too_large(self) -> str:
        """Why a head still unfinished after more than :attr:`unfinished_room` bytes were read cannot fit.

        The parser compares after parsing each read: one read may hold a whole head and the start of a
        large body, which is no head over its limit.
        """
        limits = self.limits
        return (
            f"Request head over {limits.unfinished} bytes and not finished (limits: request line "
            f"{limits.request_line}, headers {limits.headers}); {FIX}."
        )


def _shown(name: bytes) -> str:
    return name.decode("latin-1")[:64]
