"""Errors that carry their HTTP status, and the mapping of any exception to a status.

A user's ``inference.py`` may raise its own exception with a ``status_code`` attribute (as
``sagemaker_inference.errors.BaseInferenceToolkitError`` does); the runtime keeps that status
(docs/handler-semantics.md). Anything else becomes 500, without a traceback in the body unless ``SMKIT_DEBUG``.
"""

from __future__ import annotations

from typing import Any


class InferenceError(Exception):
    """An error with an HTTP status and a message safe to show the caller."""

    status_code: int = 500
    error_type: str = "InternalServerError"

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status_code is not None:
            self.status_code = status_code

    def __init_subclass__(
        cls, *, status: int | None = None, error_type: str | None = None, **kwargs: Any
    ) -> None:
        """``class Gone(InferenceError, status=410)``: a kind of error with its status and its error type
        for the JSON body (``error_type``, else the class's name)."""
        super().__init_subclass__(**kwargs)
        if status is not None:
            cls.status_code = status
            cls.error_type = error_type or cls.__name__


class BadRequest(InferenceError, status=400):
    """The body cannot be decoded as its Content-Type says (400)."""


class ModelNotFound(InferenceError, status=404):
    """No such model is loaded (404)."""


class MethodNotAllowed(InferenceError, status=405):
    """The path exists but not for this method (405)."""


class NotAcceptable(InferenceError, status=406):
    """None of the Accept types can be produced (406)."""


class ModelAlreadyLoaded(InferenceError, status=409):
    """``POST /models`` for a name that is loaded (409, docs/multi-model.md)."""


class PayloadTooLarge(InferenceError, status=413):
    """The request body is over the payload limit (413)."""


class UnsupportedMediaType(InferenceError, status=415):
    """The Content-Type has no decoder (415)."""


class ModelNotReady(InferenceError, status=503):
    """The model is still loading or failed to load (503)."""


class InvocationTimeout(InferenceError, status=504):
    """The handler ran past ``SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS`` (504)."""


def queue_timeout(limit: float, waited: float) -> InvocationTimeout:
    """504 for a request that reached its deadline (``limit`` s after arrival) before a worker was free."""
    return InvocationTimeout(
        f"the request waited {waited:.1f} s for a free worker and was not run: its {limit:g} s limit "
        "(SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS, counted from its arrival) had passed; add workers "
        "(SAGEMAKER_MODEL_SERVER_WORKERS) or send fewer requests at once"
    )


def timeout_error(seconds: float) -> InvocationTimeout:
    """The 504 of an invocation that ran past ``seconds``, whoever noticed (the worker or the front end)."""
    return InvocationTimeout(
        f"the model did not answer within {seconds:g} s "
        "(SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS); raise the limit or speed up the handler"
    )


class InsufficientMemory(InferenceError, status=507, error_type="InsufficientStorage"):
    """A model cannot fit in the multi-model memory budget even alone (507, docs/multi-model.md)."""


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
