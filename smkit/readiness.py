"""The kit's own wait for a serving runtime to become ready: ``GET /ping`` until 200.

Used by every start of a server (:mod:`smkit.ops.server_process`). The
probes carry ``User-Agent:`` :data:`~smkit.contract.READINESS_PROBE_AGENT`, which the runtime does not
access-log (a start polls every 50 ms); instead a failed wait is summarized in one line,
``/ping 503 x 37 in 6.2 s: <the runtime's reason>``. A runtime whose every worker slot has given up
loading the model answers 503 with :data:`~smkit.contract.LOAD_FAILED` (smkit/serving/front/lifecycle.py):
waiting longer cannot help, so :meth:`PingTally.observe` raises :class:`~smkit.process.LoadFailed` at once.

Standard library only.
"""

from __future__ import annotations

import json
import time

from smkit.contract import LOAD_FAILED
from smkit.process import LoadFailed


def error_text(body: bytes) -> str:
    """The ``message`` of a JSON error body (the runtime's), else the body as text."""
    text = body.decode("utf-8", "replace").strip()
    try:
        document = json.loads(text)
    except ValueError:
        return text
    if isinstance(document, dict) and isinstance(document.get("message"), str):
        return str(document["message"])
    return text


class PingTally:
    """What a start's readiness probes (``GET path``, ``/ping`` for a serving runtime) answered: how many
    were not 200, the last status and reason."""

    def __init__(self, path: str = "/ping") -> None:
        self.path = path
        self.started = time.monotonic()
        self.failures = 0
        self.status = 0
        self.reason = ""

    def observe(self, status: int, body: bytes) -> bool:
        """True for 200; count any other answer (0: nothing answered yet, not counted); raise
        :class:`LoadFailed` when the runtime says the model failed to load for good."""
        if status == 200:
            return True
        if status:
            self.failures += 1
            self.status = status
            self.reason = error_text(body)
            if self.reason.startswith(f"{LOAD_FAILED}:"):
                raise LoadFailed(self.summary())
        return False

    def summary(self) -> str:
        """``/ping 503 x N in S s: reason`` (or that nothing answered)."""
        seconds = time.monotonic() - self.started
        if not self.failures:
            return f"{self.path} did not answer in {seconds:.1f} s"
        return f"{self.path} {self.status} x {self.failures:,} in {seconds:.1f} s: {self.reason}"
