"""The server runner: listen on a socket, track connections, stop gracefully on SIGTERM or SIGINT.

:meth:`Server.serve` serves a listening (or bound) socket until :meth:`Server.stop` or, with
``signals=True`` (the main thread only), SIGTERM or SIGINT. Then it stops accepting, closes idle
connections, lets in-flight requests finish for up to ``grace_seconds`` (a second signal cuts the wait
short), aborts what is left and returns. The signal is not re-raised: the process goes on to its own
clean-up (a serving process stops its model workers after its front end) and chooses its exit status;
:attr:`Server.signal` says which signal stopped it.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import Callable
from types import FrameType
from typing import Any

from smkit.http1.connection import Handler, HTTP1Protocol, Refusal, TrackedConnection, message_refusal
from smkit.http1.head_limits import ALB_LIMITS, HeadBounds, HeadLimits
from smkit.http1.responses import DateLine

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
BACKLOG = 2048


class Server:
    """An HTTP/1.1 server of ``handler``'s requests.

    Args:
        handler: what requests are given to (:class:`~smkit.http1.connection.Handler`).
        refusal: the shape of 400 answers to refused heads and malformed requests (and of the 500 when the
            handler raises).
        limits: the request-head bounds (:mod:`smkit.http1.head_limits`).
        keep_alive_seconds: an idle connection is closed after one to two of these periods.
        grace_seconds: how long a stop waits for in-flight requests.
        on_signal: called with the signal number when SIGTERM or SIGINT starts the stop.
    """

    def __init__(
        self,
        handler: Handler,
        *,
        refusal: Refusal = message_refusal,
        limits: HeadLimits = ALB_LIMITS,
        keep_alive_seconds: float = 5.0,
        grace_seconds: float = 20.0,
        on_signal: Callable[[int], None] | None = None,
    ) -> None:
        self.handler = handler
        self.refusal = refusal
        self.limits = limits
        self.keep_alive_seconds = keep_alive_seconds
        self.grace_seconds = grace_seconds
        self.on_signal = on_signal
        self.connections: set[TrackedConnection] = set()
        self.date = DateLine()
        self.signal: int | None = None  # the signal that stopped the server
        self._stop: asyncio.Event | None = None
        self._stop_asked = False  # stop() before serve() started: serve() returns at once
        self._drained: asyncio.Event | None = None
        self._stopping = False

    def head_bounds(self) -> HeadBounds:
        return HeadBounds(self.limits)

    def protocol(self) -> HTTP1Protocol:
        """A new connection's protocol (the factory given to ``loop.create_server``)."""
        return HTTP1Protocol(self)

    def closed(self, conn: TrackedConnection) -> None:
        """``conn`` is closed or upgraded: no longer this server's to wait for."""
        self.connections.discard(conn)
        if self._stopping and not self.connections and self._drained is not None:
            self._drained.set()

    def stop(self) -> None:
        """Start the graceful stop (on the server's loop; from another thread, ``call_soon_threadsafe``)."""
        self._stop_asked = True
        if self._stop is not None:
            self._stop.set()

    async def serve(self, sock: socket.socket, *, signals: bool = False) -> None:
        """Serve ``sock`` until :meth:`stop` (or SIGTERM/SIGINT with ``signals``); return once stopped."""
        loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._drained = asyncio.Event()
        if self._stop_asked:
            self._stop.set()
        listener = await loop.create_server(self.protocol, sock=sock, backlog=BACKLOG)
        previous: dict[int, Any] = {}
        try:
            if signals:
                # signal.signal, not loop.add_signal_handler: the handler runs at the next bytecode of the main
                # thread, before the loop handles any event that came after the signal (a model worker
                # that got the same signal and exited), so on_signal is always first.
                for sig in STOP_SIGNALS:
                    previous[sig] = signal.signal(sig, self._signal_handler(loop))
            await self._stop.wait()
            self._stopping = True
            listener.close()
            for conn in list(self.connections):
                conn.shutdown()
            if self.connections:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._drained.wait(), self.grace_seconds)
            for conn in list(self.connections):
                conn.abort()
        finally:
            listener.close()
            for stop_signal, handler in previous.items():
                signal.signal(stop_signal, handler)

    def _signal_handler(self, loop: asyncio.AbstractEventLoop) -> Callable[[int, FrameType | None], None]:
        def handler(sig: int, frame: FrameType | None) -> None:
            if self.signal is not None:  # a second signal: stop waiting for in-flight requests
                if self._drained is not None:
                    loop.call_soon_threadsafe(self._drained.set)
                return
            self.signal = sig
            if self.on_signal is not None:
                self.on_signal(sig)
            loop.call_soon_threadsafe(self.stop)

        return handler
