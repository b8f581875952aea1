"""Errors that carry their HTTP status, and the mapping of any exception to a status.

A user's ``inference.py`` may raise its own exception with a ``status_code`` attribute (as
``sagemaker_inference.errors.BaseInferenceToolkitError`` does); the runtime keeps that status
(docs/handler-semantics.md). Anything else becomes 500, without a traceback in the body unless ``SMKIT_DEBUG``.
"""

from __future__ import annotations


class InferenceError(Exception):
    """An error with an HTTP status and a message safe to show the caller."""

    status_code: int = 500
    error_type: str = "InternalServerError"

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status_code is not None:
            self.status_code = status_code


class BadRequest(InferenceError):
    """The body cannot be decoded as its Content-Type says (400)."""

    status_code = 400
    error_type = "BadRequest"


class ModelNotFound(InferenceError):
    """No such model is loaded (404)."""

    status_code = 404
    error_type = "ModelNotFound"


class MethodNotAllowed(InferenceError):
    """The path exists but not for this method (405)."""

    status_code = 405
    error_type = "MethodNotAllowed"


class NotAcceptable(InferenceError):
    """None of the Accept types can be produced (406)."""

    status_code = 406
    error_type = "NotAcceptable"


class ModelAlreadyLoaded(InferenceError):
    """``POST /models`` for a name that is loaded (409, docs/multi-model.md)."""

    status_code = 409
    error_type = "ModelAlreadyLoaded"


class PayloadTooLarge(InferenceError):
    """The request body is over the payload limit (413)."""

    status_code = 413
    error_type = "PayloadTooLarge"


class UnsupportedMediaType(InferenceError):
    """The Content-Type has no decoder (415)."""

    status_code = 415
    error_type = "UnsupportedMediaType"


class ModelNotReady(InferenceError):
    """The model is still loading or failed to load (503)."""

    status_code = 503
    error_type = "ModelNotReady"


class InvocationTimeout(InferenceError):
    """The handler ran past ``SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS`` (504)."""

    status_code = 504
    error_type = "InvocationTimeout"


def queue_timeout(limit: float, waited: float) -> InvocationTimeout:
    """504 for a request that reached its deadline (``limit`` s after arrival) before a worker was free."""
    return InvocationTimeout(
        f"the request waited {waited:.1f} s for a free worker and was not run: its {limit:g} s limit "
        "(SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS, counted from its arrival) had passed; add workers "
        "(SAGEMAKER_MODEL_SERVER_WORKERS) or send fewer requests at once"
    )


class InsufficientMemory(InferenceError):
    """A model cannot fit in the multi-model memory budget even alone (507, docs/multi-model.md)."""

    status_code = 507
    error_type = "InsufficientStorage"


def status_of(exc: BaseException) -> int:
    """The HTTP status for ``exc``: its own ``status_code`` when it is a valid 4xx/5xx, else 500."""
    code = getattr(exc, "status_code", None)
    if isinstance(code, int) and 400 <= code <= 599:
        return code
    return 500


def type_of(exc: BaseException, status: int) -> str:
    """A short error type for the JSON body."""
    if isinstance(exc, InferenceError):
        return exc.error_type
    if getattr(exc, "status_code", None) == status:
        return type(exc).__name__
    return "InternalServerError"


# What the toolkit reports for an exception whose message is empty: it wraps any exception that is not
# its own in GenericInferenceToolkitError(500, str(e)), whose message defaults to this text
# (https://github.com/aws/sagemaker-inference-toolkit/blob/master/src/sagemaker_inference/errors.py).
EMPTY_MESSAGE = "Invalid Request"


def message_of(exc: BaseException) -> str:
    """The caller-facing message, as the toolkit reports it.

    ``exc.message`` when it is a non-empty string (toolkit errors carry one), else the toolkit error's
    ``phrase``, else ``str(exc)``; an empty message is reported as :data:`EMPTY_MESSAGE`, as the toolkit
    does (``raise RuntimeError()`` answers 500 "Invalid Request").
    """
    message = getattr(exc, "message", None)
    if isinstance(message, str):
        if message:
            return message
        phrase = getattr(exc, "phrase", None)
        return phrase if isinstance(phrase, str) and phrase else EMPTY_MESSAGE
    return str(exc) or EMPTY_MESSAGE
