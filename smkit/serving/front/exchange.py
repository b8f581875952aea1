"""The front end's HTTP: the kit's HTTP/1.1 server (:mod:`smkit.http1`) with the runtime's error shape.

llhttp (httptools) parses; :mod:`smkit.http1` bounds request heads with the limits AWS documents for its
HTTP front doors (request line 16 KiB, one header 16 KiB, all headers 64 KiB:
https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-limits.html#http-headers-quotas)
and at most 100 header fields (gunicorn's bound; AWS documents none). A refused head or a malformed request
is answered 400 with the runtime's JSON error body (:func:`runtime_refusal`: ``{"code", "type",
"message"}``, the message naming the field, size, limit and fix) and the connection closed, so a head
never holds more than one read beyond the limits in memory.

Requests run without ASGI: a request is an :class:`Exchange` (:class:`smkit.http1.Request`) that collects
its body from the parser's callbacks and is handed to :class:`~smkit.serving.front.frontend.FrontEnd` once
complete; the reply comes back as a call, and its head and body leave in one ``write``. No task, event
or timer per request: on two cores shared with the model workers, the front end's CPU per request
bounds the throughput of a fast model. Pipelined requests are answered in order.
"""

from __future__ import annotations

import json

from smkit.http1 import Request

Exchange = Request  # one request of a connection, as the front end, the pool, sessions and adapters call it


def runtime_refusal(status: int, kind: str, message: str) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """A refused request in the runtime's error shape (:mod:`smkit.serving.wire.errors`)."""
    body = json.dumps({"code": status, "type": kind, "message": message}).encode()
    return [(b"content-type", b"application/json")], body
