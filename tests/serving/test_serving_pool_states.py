"""The worker pool as a state machine: the lifecycle rules alone, then the pool with fake worker processes.

The fake processes are driven by the test through the pool's real channels (a socketpair per worker, the
kernel job queue, the shared scoreboard): they say "loaded", "failed to load", take a job off the queue and
exit with a status the test chooses, at the moment it chooses.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

import pytest

from smkit.hosting.env import VAR_WORKER_CONFIG
from smkit.serving.front import lifecycle
from smkit.serving.front.lifecycle import GAVE_UP, READY, RETRYING, STILL_LOADING, STOPPED, Lifecycle
from smkit.serving.front.pool import PoolOptions, WorkerPool
from smkit.serving.wire import ipc
from smkit.serving.wire.reply import Reply

WAIT_S = 30.0  # an upper bound for a wait that fails the test, never a timing under test


# -- the lifecycle rules ---------------------------------------------------------------------------------
def test_backoff_follows_the_fibonacci_steps_and_is_capped() -> None:
    assert [lifecycle.backoff(n) for n in range(1, 11)] == [1, 1, 2, 3, 5, 8, 13, 21, 21, 21]
    assert max(lifecycle.backoff(n) for n in range(1, 100)) <= lifecycle.MAX_BACKOFF_SECONDS


def test_a_death_while_loading_is_retried_then_the_slot_becomes_ready() -> None:
    life = Lifecycle(2, retries=3)
    life.ready(0)
    assert life.not_ready() == STILL_LOADING
    after = life.exited(1, 4242, "killed by SIGKILL")
    assert after.delay == 1.0 and after.level == logging.ERROR
    assert "worker 4242 exited (killed by SIGKILL)" in after.message and "retry 1 of 3" in after.message
    assert life.slots[1].state == RETRYING
    assert life.not_ready() == (
        f"{STILL_LOADING}; a load failed and is being retried: "
        "the worker exited (killed by SIGKILL) while loading the model"
    )
    assert life.accepting() is None  # slot 0 serves meanwhile
    life.started(1)
    life.ready(1)
    assert life.not_ready() is None and life.latched
    assert life.slots[1].failures == 0


def test_every_retry_failing_reports_the_load_error() -> None:
    life = Lifecycle(1, retries=2)
    delays = []
    for _ in range(3):
        life.started(0)
        life.load_failed(0, "RuntimeError: weights file is corrupt")
        delays.append(life.exited(0, 7, "exit status 0").delay)
    assert delays == [1.0, 1.0, None]
    assert life.slots[0].state == GAVE_UP
    assert life.not_ready() == "the model failed to load: RuntimeError: weights file is corrupt"
    assert life.accepting() == life.not_ready()


def test_after_the_first_200_replacements_keep_ping_healthy_and_failed_reloads_retry_on() -> None:
    life = Lifecycle(2, retries=1)
    life.ready(0)
    life.ready(1)
    assert life.latched and life.not_ready() is None
    after = life.exited(0, 11, "killed by SIGKILL")  # a serving worker: replaced at once
    assert after.delay == 0.0 and after.level == logging.WARNING and "starting a replacement" in after.message
    assert life.not_ready() is None
    delays = []
    for pid in range(12, 18):  # its replacements keep dying while loading: the model loaded before
        life.started(0)
        delays.append(life.exited(0, pid, "killed by SIGKILL").delay)
    assert delays == [1.0, 1.0, 2.0, 3.0, 5.0, 8.0] and life.slots[0].state == RETRYING
    assert life.not_ready() is None  # slot 1 serves
    life.exited(1, 20, "killed by SIGKILL")
    life.started(1)
    life.exited(1, 21, "killed by SIGKILL")
    assert life.not_ready() == (
        "no worker is ready; the model failed to load and is being retried: "
        "the worker exited (killed by SIGKILL) while loading the model"
    )
    assert life.accepting() is None  # requests wait for a replacement (or their deadline)
    life.started(1)
    life.ready(1)
    assert life.not_ready() is None


def test_nothing_is_started_while_the_server_stops() -> None:
    life = Lifecycle(1)
    life.ready(0)
    life.stop()
    after = life.exited(0, 5, "killed by SIGTERM")
    assert after.delay is None and life.slots[0].state == STOPPED
    assert "while the server stops; not replaced" in after.message


# -- the pool with fake processes --------------------------------------------------------------------------
class FakeWorker:
    """A worker process stand-in: the test says when it loads, takes a job, and exits with what status."""

    pids = iter(range(900_001, 999_999))

    def __init__(self, environ: Mapping[str, str]) -> None:
        config = json.loads(environ[VAR_WORKER_CONFIG])
        self.pid = next(self.pids)
        self.slot = int(config["slot"])
        self.load_at: float | None = config.get("load_at")
        self.sock = socket.socket(fileno=os.dup(int(config["fd"])))
        self.queue = socket.socket(fileno=os.dup(int(config["queue_fd"])))
        self.board = ipc.Scoreboard(os.dup(int(config["board_fd"])), int(config["slots"]))
        self.status: int | None = None
        self.exited = threading.Event()
        self.signals: list[int] = []

    # Process protocol
    def poll(self) -> int | None:
        return self.status

    def wait(self) -> int:
        self.exited.wait()
        assert self.status is not None
        return self.status

    def send_signal(self, sig: int) -> None:
        self.signals.append(sig)
        self.exit(-sig)

    # what the test makes it do
    def loaded(self) -> None:
        ipc.send_frame(self.sock, ipc.READY, ipc.encode_json({"ok": True, "pid": self.pid}))

    def load_failed(self, error: str) -> None:
        ipc.send_frame(self.sock, ipc.READY, ipc.encode_json({"ok": False, "error": error, "pid": self.pid}))

    def take(self, *, run: bool) -> int:
        """Take the next job off the shared queue as a worker does; ``run``: then record that it runs it."""
        received = ipc.JobReader(self.queue, self.board.landing(self.slot)).read()
        assert received is not None
        job_id = received[0][0]
        if run:
            self.board.run(self.slot, job_id)
        return job_id

    def exit(self, status: int) -> None:
        if self.status is None:
            self.status = status
            self.sock.close()
            self.queue.close()
            self.exited.set()


class Harness:
    def __init__(self, workers: int, timeout: float = 30.0, retries: int = 2) -> None:
        self.started: list[FakeWorker] = []
        self.answers: dict[str, tuple[Reply, int]] = {}
        self.changed = asyncio.Event()
        self.pool = WorkerPool(
            PoolOptions(
                workers=workers,
                python="python",
                config={"mode": "single"},
                timeout=timeout,
                queue_size=4,
                environ={},
                retries=retries,
                start=self.start,
            )
        )

    def start(self, argv: Sequence[str], environ: Mapping[str, str], fds: tuple[int, ...]) -> FakeWorker:
        worker = FakeWorker(environ)
        self.started.append(worker)
        return worker

    # Recipient
    def answer(self, token: Any, reply: Reply, pid: int) -> None:
        self.answers[token] = (reply, pid)
        self.changed.set()

    def stream_start(self, *args: Any) -> None:
        raise AssertionError("no streams here")

    stream_chunk = stream_end = stream_start

    def submit(self, token: str) -> None:
        self.pool.submit("POST", "/invocations", [], [b"1"], token, self)

    async def until(self, condition: Callable[[], Any]) -> Any:
        async def poll() -> Any:
            while not (value := condition()):
                await asyncio.sleep(0.005)
            return value

        return await asyncio.wait_for(poll(), WAIT_S)


def run(test: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(test())


def test_pool_replaces_a_worker_that_dies_while_loading_and_logs_its_exit(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> None:
        h = Harness(2)
        h.pool.launch()
        await h.pool.start()
        first, second = h.started
        first.loaded()
        second.exit(-signal.SIGKILL)  # an out-of-memory kill during model_fn
        await h.until(lambda: h.pool.life.slots[1].state == RETRYING)
        assert "still loading; a load failed" in str(h.pool.not_ready())
        await h.until(lambda: len(h.started) == 3)  # started at once, loading after the 1 s back-off
        h.started[2].loaded()
        await h.until(lambda: h.pool.not_ready() is None)
        assert h.pool.ready_count() == 2
        await h.pool.stop()

    with caplog.at_level(logging.INFO, logger="smkit.serving"):
        run(scenario)
    assert any(
        "exited (killed by SIGKILL) after a failed load; retrying in 1 s (retry 1 of 2)" in r.message
        for r in caplog.records
    )


def test_a_retry_starts_at_once_and_loads_when_its_back_off_is_over() -> None:
    async def scenario() -> None:
        h = Harness(1)
        h.pool.launch()
        await h.pool.start()
        assert h.started[0].load_at is None  # the first start loads at once
        h.started[0].load_failed("RuntimeError: no weights")
        failed_at = time.clock_gettime(time.CLOCK_MONOTONIC)
        h.started[0].exit(0)
        retry = await h.until(lambda: h.started[1:] and h.started[1])
        # The process exists during the back-off and is told not to load before it is over.
        assert retry.load_at is not None and retry.load_at >= failed_at + lifecycle.backoff(1)
        assert h.pool.life.slots[0].state == RETRYING
        await h.until(lambda: h.pool.life.slots[0].state == lifecycle.STARTING)  # the back-off is over
        retry.loaded()
        await h.until(lambda: h.pool.not_ready() is None)
        await h.pool.stop()

    run(scenario)


def test_pool_reports_the_load_error_when_every_retry_fails() -> None:
    async def scenario() -> None:
        h = Harness(1, retries=1)
        h.pool.launch()
        await h.pool.start()
        h.started[0].load_failed("RuntimeError: no weights")
        h.started[0].exit(0)
        await h.until(lambda: len(h.started) == 2)
        assert "being retried: RuntimeError: no weights" in str(h.pool.not_ready())
        h.started[1].exit(-signal.SIGSEGV)  # the retry dies in a C extension
        await h.until(lambda: h.pool.life.slots[0].state == GAVE_UP)
        reason = h.pool.not_ready()
        assert reason is not None and reason.status_code == 503
        assert (
            reason.message
            == "the model failed to load: the worker exited (killed by SIGSEGV) while loading the model"
        )
        assert h.pool.accepting() is not None
        await h.pool.stop()

    run(scenario)


def test_a_worker_killed_right_after_taking_a_job_answers_that_client_at_once() -> None:
    """The take-then-record window: the job id lands in the scoreboard within the receiving call itself."""

    async def scenario() -> None:
        h = Harness(2)
        h.pool.launch()
        await h.pool.start()
        for worker in h.started:
            worker.loaded()
        await h.until(lambda: h.pool.not_ready() is None)
        h.submit("a")
        h.submit("b")
        taker = h.started[0]
        taken = await asyncio.get_running_loop().run_in_executor(None, lambda: taker.take(run=False))
        taker.exit(-signal.SIGKILL)  # before it could write anything of its own
        await h.until(lambda: "a" in h.answers)
        reply, pid = h.answers["a"]
        assert taken == 1 and pid == taker.pid and reply.status == 500
        assert b"the worker process exited (killed by SIGKILL) while handling this request" in reply.body
        assert "b" not in h.answers  # still queued for the next free worker
        await h.until(lambda: len(h.started) == 3)  # a serving worker is replaced at once
        await h.pool.stop()

    run(scenario)


def test_a_queued_job_is_answered_504_at_its_deadline_counted_from_arrival() -> None:
    async def scenario() -> None:
        h = Harness(1, timeout=0.3)
        h.pool.launch()
        await h.pool.start()
        h.started[0].loaded()
        await h.until(lambda: h.pool.not_ready() is None)
        h.submit("busy")
        await asyncio.get_running_loop().run_in_executor(
            None, lambda: h.started[0].take(run=True)
        )  # never answers
        h.submit("queued")
        await h.until(lambda: {"busy", "queued"} <= h.answers.keys())
        queued, _ = h.answers["queued"]
        assert queued.status == 504 and b"was not run" in queued.body
        busy, _ = h.answers["busy"]
        assert busy.status == 504 and b"did not answer within 0.3 s" in busy.body
        await h.until(lambda: signal.SIGKILL in h.started[0].signals)  # overran the kill grace
        await h.pool.stop()

    run(scenario)


def test_a_worker_that_exits_while_the_server_stops_is_not_replaced() -> None:
    async def scenario() -> None:
        h = Harness(2)
        h.pool.launch()
        await h.pool.start()
        for worker in h.started:
            worker.loaded()
        await h.until(lambda: h.pool.not_ready() is None)
        h.pool.stopping()  # the front end got SIGTERM
        h.started[0].exit(-signal.SIGTERM)  # the same group signal reached a worker
        await h.until(lambda: h.pool.life.slots[0].state == STOPPED)
        await h.pool.stop()
        assert len(h.started) == 2
        assert all(w.status is not None for w in h.started)
        assert h.pool.life.slots[1].state in (STOPPED, READY)

    run(scenario)
