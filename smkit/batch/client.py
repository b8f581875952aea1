"""HTTP calls a transform job makes to its container: ``POST /invocations`` and ``GET /execution-parameters``.

One keep-alive connection per worker thread; a job runs at most MaxConcurrentTransforms requests at once.
Failed invocations (connection errors, 5xx) are retried ``InvocationsMaxRetries`` times, and each waits at most
``InvocationsTimeoutInSeconds`` (ModelClientConfig,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ModelClientConfig.html).
"""

from __future__ import annotations

import http.client
import json
import threading
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from smkit.readiness import error_text


class InvocationError(RuntimeError):
    """The container answered a request with a non-2xx status, or could not be reached."""

    def __init__(self, status: int | None, message: str) -> None:
        self.status = status
        self.message = message
        self.records = ""  # which records the failed request carried, filled in by the job
        what = f"Bad HTTP status received from algorithm: {status}" if status else "No answer from algorithm"
        super().__init__(f"{what}\n\nMessage:\n{message}")


@dataclass
class ContainerClient:
    """Talks to one serving container at ``base_url`` (``http://127.0.0.1:PORT``)."""

    base_url: str
    timeout_s: float = 600.0
    max_retries: int = 3
    _local: threading.local = field(default_factory=threading.local, repr=False)

    def __post_init__(self) -> None:
        parts = urlsplit(self.base_url)
        if parts.scheme != "http" or not parts.hostname or not parts.port:
            raise ValueError(f"container URL {self.base_url!r} must look like http://127.0.0.1:8080")
        self._host, self._port = parts.hostname, parts.port

    def invoke(self, body: bytes, content_type: str | None, accept: str | None) -> bytes:
        """POST ``body`` to ``/invocations``; return the response body or raise :class:`InvocationError`."""
        headers: dict[str, str] = {}
        if content_type:
            headers["Content-Type"] = content_type
        if accept:
            headers["Accept"] = accept
        last: InvocationError | None = None
        for _ in range(self.max_retries + 1):
            try:
                status, payload = self._request("POST", "/invocations", body, headers)
            except OSError as exc:
                last = InvocationError(None, f"{type(exc).__name__}: {exc}")
                continue
            if 200 <= status < 300:
                return payload
            last = InvocationError(status, error_text(payload))
            if status < 500:
                break
        assert last is not None
        raise last

    def execution_parameters(self) -> dict[str, object] | None:
        """The container's ``GET /execution-parameters`` answer, or None when it has none (404 or not JSON)."""
        try:
            status, payload = self._request("GET", "/execution-parameters", None, {})
        except OSError:
            return None
        if status != 200:
            return None
        try:
            answer = json.loads(payload)
        except ValueError:
            return None
        return answer if isinstance(answer, dict) else None

    def _request(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, bytes]:
        for attempt in range(2):
            connection = self._connection()
            try:
                connection.request(method, path, body=body, headers=headers)
                response = connection.getresponse()
                payload = response.read()
                if response.will_close:
                    self._drop()
                return response.status, payload
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                # A kept-alive connection the server already closed: reconnect once.
                self._drop()
                if attempt:
                    raise
            except BaseException:
                self._drop()
                raise
        raise ConnectionError("unreachable")

    def _connection(self) -> http.client.HTTPConnection:
        connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout_s)
            self._local.connection = connection
        return connection

    def _drop(self) -> None:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None
