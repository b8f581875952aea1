"""``async def`` hooks: awaited on the worker's one event loop, bounded by the request's deadline.

A handler whose hooks wait on I/O may write them as coroutines (``async def predict_fn``, calling an
async client of a feature store or another endpoint). The worker runs one event loop on a thread of its
own (started on the first coroutine); the thread that runs the request hands the coroutine over and waits
for its result until the request's deadline, and at the deadline the coroutine is cancelled, wherever it
waits, and the request answers 504. With ``SMKIT_WORKER_CONCURRENCY`` above 1 the waits of all the
requests in flight overlap on that loop (docs/serving-runtime.md, "Handlers that wait").
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Coroutine
from typing import Any

from smkit.serving.worker import deadline

_loop: list[asyncio.AbstractEventLoop] = []
_start = threading.Lock()


def worker_loop() -> asyncio.AbstractEventLoop:
    """The worker's event loop for ``async def`` hooks, running on its own thread (started once)."""
    if not _loop:
        with _start:
            if not _loop:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="smkit-async-hooks", daemon=True).start()
                _loop.append(loop)
    return _loop[0]


def result(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Await ``coroutine`` on the worker's loop; at the running request's deadline cancel it and raise
    :class:`~smkit.serving.wire.errors.InvocationTimeout`."""
    future = asyncio.run_coroutine_threadsafe(coroutine, worker_loop())
    until = deadline.job_until()
    try:
        return future.result(None if not until else max(0.0, until - time.monotonic()))
    except concurrent.futures.TimeoutError:
        if future.done():
            raise  # the coroutine's own error
        raise deadline.timeout_error(deadline.job_limit()) from None
    finally:
        if not future.done():
            future.cancel()  # the deadline passed, or the wait was interrupted (SIGALRM in the main thread)
