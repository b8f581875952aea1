"""Dynamic batching: a model worker takes several invocations off the shared queue and serves them with one
``predict_batch_fn`` call (docs/handler-semantics.md, "Dynamic batching").

On only with ``SAGEMAKER_TS_BATCH_SIZE`` above 1 (the names AWS's PyTorch toolkit gives TorchServe's
``batchSize`` and ``maxBatchDelay``:
https://github.com/aws/sagemaker-pytorch-inference-toolkit/blob/master/src/sagemaker_pytorch_serving_container/ts_parameters.py).
The batch is formed where the requests already are: the kernel's job queue that every worker reads
(:mod:`smkit.serving.wire.ipc`). A worker that takes an invocation keeps reading the queue, without blocking,
into the same buffers and the same per-slot scoreboard words the front end already reads, until it holds
``SAGEMAKER_TS_BATCH_SIZE`` requests or ``SAGEMAKER_TS_MAX_BATCH_DELAY`` ms have passed since the first
one arrived (the time it waited for a free worker counts: under load, when requests queue anyway, a batch
takes what is waiting and does not wait again). No request makes an extra hop or is copied once more,
and an idle worker never waits for another to fill its batch: whichever worker is free takes the next
request, as without batching.

Rules:

- Deadlines count from arrival, as always: the wait ends at the earliest deadline of the requests held, a
  request whose deadline has passed is answered 504 and left out, and the batch runs with the earliest
  remaining deadline as its own (the front end answers 504 at each request's deadline in any case).
- Only invocations for the same model share a batch (multi-model mode batches per model). A request that is
  not one (a WebSocket session, ``/models`` calls, another model's invocation) ends the wait; it is served
  next, alone or as the first of the next batch. A bidirectional session is therefore never batched, and a
  batched answer is always a whole body (:meth:`smkit.serving.worker.handler.ModelHandler.invoke_batch`).
- Every job the worker holds is in its scoreboard slot (``Scoreboard.landing(slot, index)``), so the front
  end answers each one if the worker dies, and treats them as running while the batch runs.
"""

from __future__ import annotations

import math
import os
import select
import socket
import time
from collections.abc import Callable
from typing import Any

from smkit.serving.wire import ipc
from smkit.serving.wire.errors import queue_timeout
from smkit.serving.wire.reply import error_reply
from smkit.serving.worker import deadline
from smkit.serving.worker.context import RequestHeaders
from smkit.serving.worker.routes import WorkerRequest, WorkerRoutes

Received = tuple[ipc.JobMeta, bytes]
_CLOSED: Any = object()  # the queue closed while a batch was forming


def serve(
    reader: ipc.JobReader,
    sock: socket.socket,
    board: ipc.Scoreboard,
    slot: int,
    router: WorkerRoutes,
    run_one: Callable[[Received], None],
    stop: Any,
) -> None:
    """The worker's loop with batching on: batches of invocations, everything else through ``run_one``.

    ``stop`` has the worker's ``busy`` and ``requested`` flags (SIGTERM: finish the work in hand, then exit).
    """
    env = router.env
    size, delay = env.batch_size, env.max_batch_delay_ms / 1000
    poller = select.poll()
    poller.register(reader.sock, select.POLLIN)
    pending: Received | None = None
    while True:
        received = pending if pending is not None else reader.read()
        pending = None
        if received is None or received is _CLOSED:
            return
        (_, queued_at, until, method, path, raw), _ = received
        headers = RequestHeaders.from_raw(raw)
        key = router.batch_key(method, path, headers)
        if key is None:
            run_one(received)
        else:
            stop.busy = True
            batch = [(received, headers)]
            # The delay counts from the first request's arrival: time it waited for a free worker counts.
            limit = min(queued_at + delay, until)
            pending = _fill(reader, board, slot, poller, router, batch, key, size, limit)
            _run(sock, board, slot, router, key, batch)
            board.finish_batch(slot, keep=pending[0][0] if pending not in (None, _CLOSED) else 0)
            stop.busy = False
        if stop.requested or pending is _CLOSED:
            return


def _fill(
    reader: ipc.JobReader,
    board: ipc.Scoreboard,
    slot: int,
    poller: select.poll,
    router: WorkerRoutes,
    batch: list[tuple[Received, RequestHeaders]],
    key: str,
    size: int,
    limit: float,
) -> Received | None:
    """Read more jobs for ``key`` into ``batch`` until it is full or ``limit`` passes; a job taken that
    cannot join is returned (to be served next), the queue closing returns ``_CLOSED``."""
    while len(batch) < size:
        try:
            received = reader.read(board.landing(slot, len(batch)), socket.MSG_DONTWAIT)
        except BlockingIOError:
            wait = limit - time.monotonic()
            if wait <= 0:
                return None
            poller.poll(math.ceil(wait * 1000))  # every idle worker wakes; one of them gets the job
            continue
        if received is None:
            return _CLOSED
        (_, _, until, method, path, raw), _ = received
        headers = RequestHeaders.from_raw(raw)
        if router.batch_key(method, path, headers) != key:
            return received
        batch.append((received, headers))
        limit = min(limit, until)
    return None


def _run(
    sock: socket.socket,
    board: ipc.Scoreboard,
    slot: int,
    router: WorkerRoutes,
    key: str,
    batch: list[tuple[Received, RequestHeaders]],
) -> None:
    """Answer every job of ``batch``: 504 for those past their deadline, one batched call for the rest."""
    pid = os.getpid()
    now = time.monotonic()
    live: list[tuple[int, WorkerRequest, float]] = []
    until = math.inf
    for ((job_id, queued_at, job_until, method, path, _), body), headers in batch:
        if now >= job_until:  # its client has had its 504 from the front end
            reply = error_reply(queue_timeout(router.env.timeout_seconds, now - queued_at), debug=False)
            timings = ipc.worker_timings(now - queued_at, None)
            meta = ipc.reply_meta(job_id, reply.status, reply.content_type, reply.headers, pid, timings)
            ipc.send_frame(sock, ipc.REPLY, meta, reply.body)
        else:
            live.append((job_id, WorkerRequest(method, path, headers, body), now - queued_at))
            until = min(until, job_until)
    if not live:
        return
    board.run(slot, live[0][0])  # the front end counts every job the slot holds as running with it
    deadline.start_job(until)
    replies = router.dispatch_batch(key, [request for _, request, _ in live])
    size = len(live)  # on the batch's first reply: one batch-size observation per batch
    for (job_id, _, waited), reply in zip(live, replies, strict=True):
        timings = ipc.worker_timings(waited, reply.timings, size)
        size = 0
        meta = ipc.reply_meta(job_id, reply.status, reply.content_type, reply.headers, pid, timings)
        ipc.send_frame(sock, ipc.REPLY, meta, reply.body)
    deadline.start_job(0.0)
