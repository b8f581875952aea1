"""TensorFlow Serving's error statuses: a canonical code, its HTTP status and the message.

The REST API answers a failed request with the HTTP status of the error's canonical code (the usual gRPC
to HTTP table, as tensorflow/serving ``model_servers/http_server.cc`` maps it) and the body
``{ "error": "<message>" }`` (:func:`smkit.tfs.jsonfmt.error_body`).
"""

from __future__ import annotations

HTTP_STATUS = {
    "CANCELLED": 499,
    "UNKNOWN": 500,
    "INVALID_ARGUMENT": 400,
    "DEADLINE_EXCEEDED": 504,
    "NOT_FOUND": 404,
    "ALREADY_EXISTS": 409,
    "PERMISSION_DENIED": 403,
    "RESOURCE_EXHAUSTED": 429,
    "FAILED_PRECONDITION": 400,
    "ABORTED": 409,
    "OUT_OF_RANGE": 400,
    "UNIMPLEMENTED": 501,
    "INTERNAL": 500,
    "UNAVAILABLE": 503,
    "DATA_LOSS": 500,
    "UNAUTHENTICATED": 401,
}


class TfsError(Exception):
    """A failed request, carrying TensorFlow Serving's canonical code and message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def http_status(self) -> int:
        """The HTTP status TensorFlow Serving answers with."""
        return HTTP_STATUS.get(self.code, 500)

    def to_string(self) -> str:
        """``Status::ToString()``, as nested messages quote an inner error: ``INVALID_ARGUMENT: ...``."""
        return f"{self.code}: {self.message}"


def invalid(message: str) -> TfsError:
    """An ``INVALID_ARGUMENT`` error (HTTP 400)."""
    return TfsError("INVALID_ARGUMENT", message)


def not_found(message: str) -> TfsError:
    """A ``NOT_FOUND`` error (HTTP 404)."""
    return TfsError("NOT_FOUND", message)
