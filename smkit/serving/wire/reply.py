"""A reply as both sides of the runtime hold it: status, body, content type, extra headers.

The worker sends one per request in a ``RPLY`` frame (:mod:`smkit.serving.wire.ipc`); the front end
rebuilds it from that frame and writes it to the client, or makes its own (``/ping``, errors it answers
itself). A streamed answer is the worker's :class:`smkit.serving.worker.handler.StreamedReply`.
"""

from __future__ import annotations

import json
import traceback
from dataclasses import dataclass, field
from typing import Any

from smkit.contract import JSON
from smkit.serving.wire.errors import InferenceError, message_of, status_of, type_of


@dataclass
class Reply:
    """A protocol-neutral response."""

    status: int
    body: bytes
    content_type: str
    headers: dict[str, str] = field(default_factory=dict)
    # Seconds in the queue, input_fn, predict_fn (or transform_fn, a batch's predict_batch_fn), output_fn
    # (NaN: did not run), and the batch size (smkit.serving.wire.ipc.TIMINGS; docs/observability.md).
    timings: tuple[float, float, float, float, int] | None = None


def error_reply(exc: BaseException, *, debug: bool) -> Reply:
    """A JSON error body ``{"code", "type", "message"}`` (plus ``traceback`` in debug mode), or the
    message itself when the handler raised a JSON document as its message.

    The toolkit's body is the message, then a newline and the traceback (``Transformer.handle_error``):
    a handler that raises ``ValueError('{"error": "..."}')`` (as JumpStart's scripts do) gives clients that
    JSON first. smkit sends that document alone, as ``application/json``, instead of escaping it inside its
    own envelope (docs/handler-semantics.md, "Where smkit differs").
    """
    status = status_of(exc)
    message = message_of(exc)
    if not isinstance(exc, InferenceError) and _json_document(message):
        return Reply(status, message.encode("utf-8"), JSON)
    payload: dict[str, Any] = {"code": status, "type": type_of(exc, status), "message": message}
    if debug:
        payload["traceback"] = "".join(traceback.format_exception(exc))
    return Reply(status, json.dumps(payload).encode(), JSON)


def _json_document(message: str) -> bool:
    """Whether ``message`` is a JSON object or array (a plain sentence never is)."""
    text = message.strip()
    if not (text.startswith("{") and text.endswith("}")) and not (
        text.startswith("[") and text.endswith("]")
    ):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
