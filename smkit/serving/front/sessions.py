"""Stateful sessions in the front end: create, route to one worker, close, expire.

On with ``SAGEMAKER_ENABLE_STATEFUL_SESSIONS=true`` (single-model mode). The behaviour is that of AWS's
reference implementation of the container side, the ``model-hosting-container-standards`` package
(docs/sessions-and-adapters.md; https://docs.aws.amazon.com/sagemaker/latest/dg/stateful-sessions.html):

- a ``POST /invocations`` body of exactly ``{"requestType": "NEW_SESSION"}`` creates a session: 200,
  ``Session <id> created``, header ``X-Amzn-SageMaker-New-Session-Id: <id>; Expires=<UTC time>``;
- ``{"requestType": "CLOSE"}`` with ``X-Amzn-SageMaker-Session-Id: <id>`` closes it: 200,
  ``Session <id> closed``, header ``X-Amzn-SageMaker-Closed-Session-Id: <id>``;
- any other request carrying a session id goes to the worker holding the session; an id that is not a
  live session is 400 ``Bad request: session not found: <id>``;
- a session ends ``SAGEMAKER_SESSIONS_EXPIRATION`` seconds (default 1200) after its creation.

The session's state lives in one worker's memory, so every request of a session is sent to that worker
only (:mod:`smkit.serving.front.pinning`), and the handler's ``session_start_fn`` / ``session_close_fn`` run
there. A worker that exits takes its sessions with it: they are forgotten at once.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from smkit import contract
from smkit.serving.front.exchange import Exchange
from smkit.serving.front.relay import StreamControl, WholeReply
from smkit.serving.wire import messages
from smkit.serving.wire.errors import BadRequest, InferenceError, ModelNotReady
from smkit.serving.wire.reply import Reply, error_reply

if TYPE_CHECKING:
    from smkit.hosting.env import ServingEnv
    from smkit.serving.front.pool import WorkerPool
    from smkit.serving.front.relay import Client

log = logging.getLogger("smkit.serving")
NEW_SESSION = "NEW_SESSION"
CLOSE = "CLOSE"
REQUEST_TYPE = b'"requestType"'
# A session request is exactly {"requestType": "NEW_SESSION" | "CLOSE"}: a larger body is never one, and
# is passed on without being searched or copied.
MAX_SESSION_REQUEST = 4096
SESSION_HEADER = contract.SESSION_ID.lower().encode()
TEXT = "text/plain; charset=utf-8"
DEFAULT_ROOT = "/dev/shm/sagemaker_sessions"  # the reference package's default, else the temp directory


class FailedDependency(InferenceError, status=424):
    """The handler's session hook failed (424, as the reference implementation answers)."""


@dataclass
class Session:
    """One live session: the worker slot that holds it, when it ends, its scratch directory."""

    id: str
    slot: int
    expires: float  # time.time()
    directory: str
    timer: asyncio.TimerHandle | None = field(default=None, repr=False)


def request_type(body: bytes) -> str | None:
    """``NEW_SESSION`` or ``CLOSE`` when ``body`` is a session request, else None; BadRequest if malformed.

    A JSON object with a ``requestType`` key is a session request and must be exactly
    ``{"requestType": "NEW_SESSION" | "CLOSE"}`` (the reference rejects other keys and values with 400).
    """
    if REQUEST_TYPE not in body:
        return None
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(payload, dict) or "requestType" not in payload:
        return None
    kind = payload["requestType"]
    extra = sorted(set(payload) - {"requestType"})
    if kind not in (NEW_SESSION, CLOSE) or extra:
        problem = f"unexpected keys {extra}" if extra else f"requestType {kind!r} is not NEW_SESSION or CLOSE"
        raise BadRequest(
            f"invalid session request: {problem}; send exactly "
            '{"requestType": "NEW_SESSION"} or {"requestType": "CLOSE"}'
        )
    return str(kind)


def expires_header(session_id: str, expires: float) -> str:
    """``<id>; Expires=2026-11-27T18:00:00Z`` (the runtime API's NewSessionId pattern)."""
    return f"{session_id}; Expires={datetime.fromtimestamp(expires, tz=UTC).strftime('%Y-%m-%dT%H:%M:%SZ')}"


def session_root(configured: str | None) -> str:
    """Where session directories go: ``SAGEMAKER_SESSIONS_PATH``, else /dev/shm, else the temp directory."""
    if configured:
        return configured
    if os.access("/dev/shm", os.W_OK):
        return DEFAULT_ROOT
    return os.path.join(tempfile.gettempdir(), "sagemaker_sessions")


class _Then(WholeReply):
    """A recipient that turns the worker's reply into the client's (session create and close)."""

    def __init__(self, client: Client, then: Callable[[Reply], Reply]) -> None:
        self.client = client
        self.then = then

    def answer(self, token: Any, reply: Reply, pid: int) -> None:
        self.client.answer(token, self.then(reply), pid)


class _Quiet(WholeReply):
    """The recipient of a close the front end sends itself (expiry): a failure is logged."""

    def answer(self, token: Any, reply: Reply, pid: int) -> None:
        if reply.status != 200:
            log.warning("session_close_fn of expired session %s failed: %s", token, _message(reply))

    def stream_start(self, token: Any, reply: Reply, pid: int, control: StreamControl) -> None:
        control.cancel()  # nobody waits for the answer


def _message(reply: Reply) -> str:
    try:
        return str(json.loads(reply.body)["message"])
    except (ValueError, KeyError, TypeError):
        return reply.body.decode("utf-8", "replace")


class Sessions:
    """The session table of one front end."""

    def __init__(self, pool: WorkerPool, client: Client, env: ServingEnv) -> None:
        self.pool = pool
        self.client = client
        self.lifetime = env.sessions_expiration_seconds
        self.root = session_root(env.sessions_path)
        self.table: dict[str, Session] = {}
        self._turn = itertools.count()
        self.pool.pinning.on_exit.append(self._worker_exited)

    def take(self, exchange: Exchange) -> bool:
        """Handle ``exchange`` (a POST /invocations) if it is a session's; False: an ordinary request."""
        session_id = exchange.header_text(SESSION_HEADER)
        kind = request_type(b"".join(exchange.chunks)) if exchange.size <= MAX_SESSION_REQUEST else None
        if kind is None:
            if session_id is None or session_id == NEW_SESSION:
                return False
            session = self.get(session_id)
            self.pool.submit(
                exchange.method,
                exchange.path,
                exchange.headers,
                exchange.chunks,
                exchange,
                self.client,
                slot=session.slot,
            )
        elif kind == NEW_SESSION:
            self._create(exchange)
        else:
            if not session_id:
                raise FailedDependency(f"Failed to close session: invalid session_id: {session_id}")
            self._close(exchange, self.get(session_id))
        return True

    def get(self, session_id: str) -> Session:
        """The live session ``session_id``; 400 when there is none (never created, closed or expired)."""
        session = self.table.get(session_id)
        if session is None:
            raise BadRequest(f"Bad request: session not found: {session_id}")
        return session

    def _create(self, exchange: Exchange) -> None:
        slots = self.pool.pinning.ready_slots()
        if not slots:
            raise ModelNotReady("no model worker is ready to hold a session; retry when /ping answers 200")
        slot = slots[next(self._turn) % len(slots)]
        session_id = str(uuid.uuid4())
        expires = time.time() + self.lifetime
        directory = os.path.join(self.root, session_id)
        os.makedirs(directory, exist_ok=True)

        def created(reply: Reply) -> Reply:
            if reply.status != 200:
                shutil.rmtree(directory, ignore_errors=True)
                return _failed("create", reply)
            session = Session(session_id, slot, expires, directory)
            session.timer = asyncio.get_running_loop().call_later(self.lifetime, self._expire, session_id)
            self.table[session_id] = session
            header = {contract.NEW_SESSION_ID: expires_header(session_id, expires)}
            return Reply(200, f"Session {session_id} created".encode(), TEXT, header)

        self._send(messages.SESSION_START, session_id, directory, slot, exchange, _Then(self.client, created))

    def _close(self, exchange: Exchange, session: Session) -> None:
        def closed(reply: Reply) -> Reply:
            if reply.status != 200:
                return _failed("close", reply)
            self._forget(session.id)
            header = {contract.CLOSED_SESSION_ID: session.id}
            return Reply(200, f"Session {session.id} closed".encode(), TEXT, header)

        self._send(
            messages.SESSION_CLOSE,
            session.id,
            session.directory,
            session.slot,
            exchange,
            _Then(self.client, closed),
        )

    def _send(
        self, path: str, session_id: str, directory: str, slot: int, token: Any, recipient: Any
    ) -> None:
        body = json.dumps({"session_id": session_id, "session_dir": directory}).encode()
        headers = [(b"content-type", contract.JSON.encode())]
        self.pool.submit(messages.INTERNAL, path, headers, [body], token, recipient, slot=slot)

    def _expire(self, session_id: str) -> None:
        session = self._forget(session_id)
        if session is not None and session.slot in self.pool.pinning.features:
            try:
                self._send(
                    messages.SESSION_CLOSE, session.id, session.directory, session.slot, session.id, _Quiet()
                )
            except InferenceError as exc:  # the queue is full: the hook is skipped, the session is gone
                log.warning("session %s expired; session_close_fn not run: %s", session_id, exc)

    def _forget(self, session_id: str) -> Session | None:
        session = self.table.pop(session_id, None)
        if session is not None:
            if session.timer is not None:
                session.timer.cancel()
            shutil.rmtree(session.directory, ignore_errors=True)
        return session

    def _worker_exited(self, slot: int) -> None:
        for session_id in [s.id for s in self.table.values() if s.slot == slot]:
            self._forget(session_id)


def _failed(action: str, reply: Reply) -> Reply:
    """The reference answers a failed hook 424 ``Failed to <action> session: <error>``."""
    error = FailedDependency(f"Failed to {action} session: {_message(reply)}")
    return error_reply(error, debug=False)
