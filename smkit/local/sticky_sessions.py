"""Sticky-session routing of the local endpoint: a session's requests reach the instance that created it.

SageMaker learns a session from the container's answer: a response header
``X-Amzn-SageMaker-New-Session-Id: <id>; Expires=<UTC time>`` binds ``<id>`` to the instance that
answered until that time, ``X-Amzn-SageMaker-Closed-Session-Id: <id>`` ends the binding, and a later
``SessionId=<id>`` (request header ``X-Amzn-SageMaker-Session-Id``) goes to that instance. Both headers
go through to the client (``NewSessionId``, ``ClosedSessionId`` in boto3's answer) and the request header
reaches the container. https://docs.aws.amazon.com/sagemaker/latest/dg/stateful-sessions.html and
docs/sessions-and-adapters.md.

An id the endpoint does not know (never created, closed, expired) goes to an instance as any request
does; the container answers it (AWS's reference container: 400 ``Bad request: session not found: <id>``),
which the client receives as a ``ModelError`` (424) with ``OriginalStatusCode`` 400, as every container
4xx. An id that breaks the API's pattern is the service's own ``ValidationError``.
"""

from __future__ import annotations

import itertools
import re
import time
from calendar import timegm
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from smkit.aws.limits import MAX_SESSION_ID
from smkit.aws.patterns import NEW_OR_SESSION_ID as NEW_OR_ID_PATTERN
from smkit.aws.patterns import NEW_SESSION_VALUE as NEW_SESSION_VALUE_PATTERN
from smkit.aws.patterns import SESSION_ID as SESSION_ID_PATTERN
from smkit.contract import CLOSED_SESSION_ID, NEW_SESSION_ID
from smkit.local.error_shapes import RuntimeApiError, validation_error

NEW_SESSION = "NEW_SESSION"
ENABLE_STATEFUL_SESSIONS = (
    "SAGEMAKER_ENABLE_STATEFUL_SESSIONS"  # the container's variable (smkit/hosting/env.py)
)
# The runtime API's SessionId patterns and the container's NewSessionId answer: smkit.aws.patterns (botocore's).
_NEW_SESSION_VALUE = re.compile(r"^([^;]+);\sExpires=(.+)$")
# Headers of a container's answer that go through to the client.
RESPONSE_HEADERS = (NEW_SESSION_ID, CLOSED_SESSION_ID)
# The same, by the lower-case name a parser gives (bytes) -> the name the client receives.
RESPONSE_FIELDS = {name.lower().encode(): name for name in RESPONSE_HEADERS}


def check_session_id(value: str | None, *, stream: bool) -> None:
    """ValidationError, worded as the service's, for a SessionId the API refuses."""
    if value is None:
        return
    pattern = SESSION_ID_PATTERN if stream else NEW_OR_ID_PATTERN
    if len(value) > MAX_SESSION_ID:
        raise validation_error(
            f"1 validation error detected: Value '{value}' at 'sessionId' failed to satisfy constraint: "
            f"Member must have length less than or equal to {MAX_SESSION_ID}"
        )
    if not re.match(pattern, value):
        hint = (
            " (a session is created with invoke_endpoint, not with a response stream)"
            if stream and value == NEW_SESSION
            else ""
        )
        raise validation_error(
            f"1 validation error detected: Value '{value}' at 'sessionId' failed to satisfy constraint: "
            f"Member must satisfy regular expression pattern: {pattern}{hint}"
        )


@dataclass
class Binding:
    instance: int
    expires: float  # time.time()


class StickySessions:
    """Session id -> the instance of one variant that holds it."""

    def __init__(self, instances: int) -> None:
        self.instances = instances
        self.bindings: dict[str, Binding] = {}
        self._turn = itertools.count()

    def holds(self, session_id: str | None) -> bool:
        """True when ``session_id`` is a live session of this variant."""
        if not session_id or session_id == NEW_SESSION:
            return False
        binding = self.bindings.get(session_id)
        if binding is not None and binding.expires <= time.time():
            del self.bindings[session_id]
            return False
        return binding is not None

    def pick(self, session_id: str | None) -> int:
        """The instance for a request: the session's, else the next in turn."""
        if self.holds(session_id):
            assert session_id is not None
            return self.bindings[session_id].instance
        return next(self._turn) % self.instances

    def record(self, instance: int, headers: Mapping[str, str]) -> None:
        """Learn from the container's answer: a new session is bound to ``instance``, a closed one freed."""
        closed = headers.get(CLOSED_SESSION_ID)
        if closed:
            self.bindings.pop(closed.strip(), None)
        created = headers.get(NEW_SESSION_ID)
        if created:
            match = _NEW_SESSION_VALUE.match(created)
            if match is None or not re.match(NEW_SESSION_VALUE_PATTERN, created):
                raise RuntimeApiError(
                    "ModelError",
                    f"The model answered {NEW_SESSION_ID}: {created!r}, which is not '<id>; Expires=<UTC time>' "
                    f"(the runtime API's pattern {NEW_SESSION_VALUE_PATTERN}); answer e.g. "
                    "'a1b2; Expires=2026-01-01T00:00:00Z'.",
                    OriginalStatusCode=200,
                    OriginalMessage=created,
                )
            until = timegm(time.strptime(match.group(2), "%Y-%m-%dT%H:%M:%SZ"))
            self.bindings[match.group(1)] = Binding(instance, until)


def sticky_instances(containers: Sequence[Any], variant: Any) -> int:
    """How many instances the local endpoint runs for ``variant``: its ``initial_instance_count`` when a
    container enables stateful sessions (``SAGEMAKER_ENABLE_STATEFUL_SESSIONS``), else one."""
    for container in containers:
        if str(container.environment.get(ENABLE_STATEFUL_SESSIONS, "")).strip().lower() in ("true", "1"):
            return max(1, int(variant.initial_instance_count))
    return 1
