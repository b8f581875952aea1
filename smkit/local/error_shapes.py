"""The SageMaker Runtime error shapes, as the service sends them and botocore parses them.

botocore's rest-json parser takes the error code from the ``x-amzn-ErrorType`` header (falling back to the
body's ``__type``/``code``, then to the HTTP status), the message from the body's ``message``/``Message``,
and copies modelled members (ModelError's ``OriginalStatusCode``, ``OriginalMessage``, ``LogStreamArn``)
from the body into ``ClientError.response``. Shapes and statuses: the botocore ``sagemaker-runtime``
service model (docs/hosting-contract.md) and
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_runtime_InvokeEndpoint.html#API_runtime_InvokeEndpoint_Errors
"""

from __future__ import annotations

import json
import os
import random
from typing import Any, NamedTuple

ERROR_TYPE_HEADER = "x-amzn-ErrorType"
REQUEST_ID_HEADER = "x-amzn-RequestId"

# Statuses from the service model's error shapes (docs/hosting-contract.md).
STATUS_BY_CODE: dict[str, int] = {
    "ValidationError": 400,
    "ThrottlingException": 400,
    "ModelError": 424,
    "ModelNotReadyException": 429,
    "InternalFailure": 500,
    "ServiceUnavailable": 503,
}


class Response(NamedTuple):
    """A whole answer of the gateway: status, ``(name, value)`` header pairs (no framing fields), body."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes


JSON = b"application/json"

# Its own generator: a caller's random.seed() does not make ids repeat; seeded again in a forked child.
_IDS = random.Random()
os.register_at_fork(after_in_child=_IDS.seed)
_VARIANT_DIGIT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}  # RFC 4122: 10xx


def new_request_id() -> str:
    """A new ``x-amzn-RequestId``: a random (version 4) UUID in its text form, as ``str(uuid.uuid4())``
    writes it, without building a :class:`uuid.UUID` and without a ``getrandom`` system call per id (an id
    names a call, it guards no secret; the gateway makes one per call it relays)."""
    digits = _IDS.randbytes(16).hex()
    return f"{digits[:8]}-{digits[8:12]}-4{digits[13:16]}-{_VARIANT_DIGIT[digits[16]]}{digits[17:20]}-{digits[20:]}"


class RuntimeApiError(Exception):
    """An error the gateway answers with, carrying its HTTP status, error code and modelled fields.

    ``code=None`` sends no error type at all, so botocore reports the HTTP status as the code; that is how
    the service's front end rejects an oversize body (``An error occurred (413) ... HTTP content length
    exceeded 6291456 bytes.``).
    """

    def __init__(self, code: str | None, message: str, *, status: int | None = None, **fields: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status if status is not None else STATUS_BY_CODE[code or "InternalFailure"]
        self.fields = fields

    def to_response(self, request_id: str | None = None) -> Response:
        """The HTTP response botocore turns back into this error."""
        body: dict[str, Any] = {"message": self.message, **self.fields}
        headers = [
            (b"content-type", JSON),
            (REQUEST_ID_HEADER.encode(), (request_id or new_request_id()).encode()),
        ]
        if self.code is not None:
            headers.append((ERROR_TYPE_HEADER.encode(), self.code.encode()))
            if self.code == "ModelError":
                # The service sends the modelled shape with capitalised member names.
                body = {"Message": self.message, **self.fields}
        return Response(self.status, headers, json.dumps(body).encode())


def validation_error(message: str) -> RuntimeApiError:
    """400 ValidationError: the request names something that does not exist or breaks a limit."""
    return RuntimeApiError("ValidationError", message)


def throttling(message: str) -> RuntimeApiError:
    """400 ThrottlingException: serverless MaxConcurrency reached (botocore retries it by default)."""
    return RuntimeApiError("ThrottlingException", message)


def model_not_ready(message: str) -> RuntimeApiError:
    """429 ModelNotReadyException: a multi-model load or a cold start did not finish in time."""
    return RuntimeApiError("ModelNotReadyException", message)


def internal_failure(message: str) -> RuntimeApiError:
    """500 InternalFailure: the gateway itself failed (a container process died, storage failed)."""
    return RuntimeApiError("InternalFailure", message)


def service_unavailable(message: str) -> RuntimeApiError:
    """503 ServiceUnavailable: the variant cannot take requests right now (shutting down)."""
    return RuntimeApiError("ServiceUnavailable", message)


def payload_too_large(limit: int) -> RuntimeApiError:
    """413 with no error type, the message the service's front end sends for an oversize body."""
    return RuntimeApiError(None, f"HTTP content length exceeded {limit} bytes.", status=413)


def model_error(
    *,
    original_status: int,
    original_message: str,
    source: str,
    log_stream_arn: str,
    log_hint: str,
) -> RuntimeApiError:
    """424 ModelError: a container answered 4xx/5xx (or timed out, reported as status 0).

    The message follows the service's wording: ``Received client error (400) from primary with message
    "...". See ... for more information.``
    """
    kind = "client" if 400 <= original_status < 500 else "server"
    message = (
        f'Received {kind} error ({original_status}) from {source} with message "{original_message}". '
        f"See {log_hint} for more information."
    )
    error_code = "CLIENT_ERROR_FROM_MODEL" if kind == "client" else "SERVER_ERROR_FROM_MODEL"
    return RuntimeApiError(
        "ModelError",
        message,
        ErrorCode=error_code,
        OriginalStatusCode=original_status,
        OriginalMessage=original_message,
        LogStreamArn=log_stream_arn,
    )
