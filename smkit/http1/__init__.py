"""The kit's HTTP/1.1 server: llhttp parsing, bounded heads, requests handed to a handler without ASGI.

One implementation serves the serving container's front end (:mod:`smkit.serving.frontend`) and the
local SageMaker Runtime gateway. It is built on public APIs only: :class:`asyncio.Protocol` and
``httptools`` (llhttp). It makes no task per request: a request is a :class:`Request` object handed to a
:class:`Handler` once its body is complete, and answered by a call; that is what keeps a front end's CPU
per request low. Modules: :mod:`~smkit.http1.protocol` (a connection), :mod:`~smkit.http1.server` (the
runner), :mod:`~smkit.http1.limits` (request-head bounds), :mod:`~smkit.http1.responses` (heads and
chunks as bytes).

Use::

    class Hello(Handler):
        def request(self, request: Request) -> None:
            # request.method "POST", request.target b"/x?y=1" (raw), request.path "/x",
            # request.headers [(b"content-type", b"text/csv"), ...] (names lower-case),
            # request.body (the whole body; request.chunks as read), request.version "1.1"
            request.respond(200, [(b"content-type", b"text/plain")], b"hello")

    server = Server(Hello(), refusal=my_refusal, grace_seconds=20)
    await server.serve(sock, signals=True)  # until SIGTERM/SIGINT or server.stop(); then returns

A handler may answer later (from a task: ``asyncio.create_task`` in :meth:`Handler.request`), and may
stream: ``request.stream(200, headers, first, flow=flow)``, ``request.write(chunk)`` (after ``await
flow.wait()`` for back-pressure, :class:`Flow`), ``request.finish()`` or ``request.finish(error)``
(closes without the last chunk). :meth:`Handler.aborted` says a client left before its answer was
complete. Bodies over :attr:`Handler.max_body` are read and dropped (``request.too_large`` holds the
size); the handler answers them (413). Refused heads and malformed requests are answered 400 by the
protocol in the ``refusal`` shape.
"""

from smkit.http1.limits import ALB_LIMITS, HeadBounds, HeadLimits, HeadTooLarge
from smkit.http1.protocol import (
    BAD_REQUEST,
    HEAD_TOO_LARGE,
    Flow,
    Handler,
    HTTP1Protocol,
    Refusal,
    Request,
    message_refusal,
)
from smkit.http1.responses import header_lines, response_head, status_line
from smkit.http1.server import Server

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
