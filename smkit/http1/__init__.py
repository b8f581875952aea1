"""The kit's HTTP/1.1 server: llhttp parsing, bounded heads, requests handed to a handler without ASGI.

One implementation serves the serving container's front end (:mod:`smkit.serving.front.frontend`) and the
local SageMaker Runtime gateway. It is built on public APIs only: :class:`asyncio.Protocol` and
``httptools`` (llhttp). It makes no task per request: a request is a :class:`Request` object handed to a
:class:`Handler` once its body is complete, and answered by a call; that is what keeps a front end's CPU
per request low. Modules: :mod:`~smkit.http1.connection` (a connection), :mod:`~smkit.http1.runner` (the
runner), :mod:`~smkit.http1.head_limits` (request-head bounds), :mod:`~smkit.http1.responses` (heads and
chunks as bytes).

Use::

    class Hello(Handler):
        def request(self, request: Request) -> None:
            request.respond(200, [(b"content-type", b"text/plain")], b"hello")

    server = Server(Hello(), refusal=my_refusal, grace_seconds=20)
    await server.serve(sock, signals=True)  # until SIGTERM/SIGINT or server.stop(); then returns

The request (:class:`Request`): ``method`` (str), ``target`` (the raw request target, bytes, query
included), ``path`` (percent-decoded str), ``headers`` (``(name, value)`` bytes pairs in order, names
lower-case; :meth:`Request.header` finds one), ``version`` ("1.1" or "1.0"), ``body`` (the whole body;
``chunks`` as read, ``size``), ``too_large`` (set instead of a body over :attr:`Handler.max_body`),
``keep_alive``, ``app`` (free for the handler).

The answer, once per request, now or later (from a task the handler started): ``request.respond(status,
headers, body)`` adds ``content-length``, ``date`` and ``connection: close`` when closing; a prepared head
goes with ``request.respond_raw(head, body)``. A streamed answer: ``request.stream(status, headers,
first, flow=flow)``, then ``request.write(chunk)`` (after ``await flow.wait()``: a :class:`Flow` is
paused while the client's buffer is full) and ``request.finish()``, or ``request.finish(error)`` to close
without the last chunk. Pipelined requests are given to the handler one at a time, in order, each once the
one before is answered.

The handler's other hooks (:class:`Handler`): :meth:`~Handler.aborted` (the client left before the
answer was complete), :meth:`~Handler.waiting` (a body still arriving), :meth:`~Handler.wants_upgrade`
and :meth:`~Handler.upgraded` (taking the connection, e.g. for a WebSocket). Refused heads and malformed
requests are answered 400 by the protocol in the ``refusal`` shape (:data:`Refusal`); an exception out
of :meth:`Handler.request` is answered 500 in that shape.
"""

from smkit.http1.connection import (
    BAD_REQUEST,
    HEAD_TOO_LARGE,
    Flow,
    Handler,
    HTTP1Protocol,
    Refusal,
    Request,
    message_refusal,
)
from smkit.http1.head_limits import ALB_LIMITS, HeadBounds, HeadLimits, HeadTooLarge
from smkit.http1.responses import header_lines, response_head, status_line
from smkit.http1.runner import Server

__all__ = [
    "ALB_LIMITS",
    "BAD_REQUEST",
    "HEAD_TOO_LARGE",
    "Flow",
    "HTTP1Protocol",
    "Handler",
    "HeadBounds",
    "HeadLimits",
    "HeadTooLarge",
    "Refusal",
    "Request",
    "Server",
    "header_lines",
    "message_refusal",
    "response_head",
    "status_line",
]
