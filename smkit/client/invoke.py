"""Calling an endpoint through boto3's ``sagemaker-runtime`` client: the same code for a real endpoint and
for the local gateway (only ``endpoint_url`` differs).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from smkit.client.codecs import deserialize
from smkit.contract import DEFAULT_ASYNC_INVOCATION_TIMEOUT_S
from smkit.object_store import Storage

DEFAULT_POLL_S = 2.0  # longest wait between polls; the first ones come quickly (local results are fast)
FIRST_POLL_S = 0.05
DEFAULT_ASYNC_TIMEOUT_S = float(DEFAULT_ASYNC_INVOCATION_TIMEOUT_S)  # docs/serverless-async.md


class InvokeError(RuntimeError):
    """An invocation failed; the message carries the service's error code and message."""


@dataclass(frozen=True)
class Target:
    """Which part of an endpoint to call (at most one is set)."""

    variant: str | None = None
    model: str | None = None
    container: str | None = None
    component: str | None = None

    def parameters(self) -> dict[str, str]:
        """InvokeEndpoint parameters for this target."""
        names = {
            "TargetVariant": self.variant,
            "TargetModel": self.model,
            "TargetContainerHostname": self.container,
            "InferenceComponentName": self.component,
        }
        return {k: v for k, v in names.items() if v is not None}


@dataclass(frozen=True)
class InvokeResult:
    """A synchronous answer: the raw body and what the service says about it."""

    body: bytes
    content_type: str | None
    invoked_variant: str | None
    custom_attributes: str | None = None

    def decoded(self) -> Any:
        """The body deserialized by the response Content-Type (sagemaker.core.deserializers)."""
        return deserialize(self.body, self.content_type)


@dataclass(frozen=True)
class AsyncSubmission:
    """An accepted InvokeEndpointAsync call."""

    inference_id: str
    output_location: str
    failure_location: str | None


@dataclass(frozen=True)
class AsyncOutcome:
    """Where an async invocation ended: its output (succeeded) or its failure object."""

    succeeded: bool
    location: str
    body: bytes
    content_type: str | None

    def decoded(self) -> Any:
        """The output (or failure text) deserialized by its Content-Type."""
        return deserialize(self.body, self.content_type)


def runtime_client(
    *, endpoint_url: str | None = None, region: str | None = None, retries: int | None = None
) -> Any:
    """A ``sagemaker-runtime`` client; with ``endpoint_url`` and no configured credentials, dummy ones
    (the local gateway does not check signatures).

    Made by botocore's session, which is what ``boto3.client("sagemaker-runtime")`` returns too, so the
    client is the same while the CLI does not import boto3 and s3transfer (a third of a second).
    """
    import botocore.session
    from botocore.config import Config

    session = botocore.session.get_session()
    kwargs: dict[str, Any] = {
        "endpoint_url": endpoint_url,
        "region_name": region or session.get_config_variable("region") or "us-east-1",
    }
    if endpoint_url and session.get_credentials() is None:
        kwargs.update(aws_access_key_id="local", aws_secret_access_key="local")
    config = Config(retries={"total_max_attempts": retries}) if retries is not None else None
    return session.create_client("sagemaker-runtime", config=config, **kwargs)


def describe_client_error(exc: Exception) -> str:
    """``ModelError: ... (OriginalStatusCode 500: ...)`` from a botocore ClientError."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return str(exc)
    error = response.get("Error", {})
    text = f"{error.get('Code', 'Error')}: {error.get('Message', '')}"
    if "OriginalStatusCode" in response:
        text += (
            f" (OriginalStatusCode {response['OriginalStatusCode']}: {response.get('OriginalMessage', '')})"
        )
    return text


def _parameters(
    endpoint: str, content_type: str, accept: str | None, custom_attributes: str | None, **more: Any
) -> dict[str, Any]:
    """The parameters of an InvokeEndpoint, InvokeEndpointWithResponseStream or InvokeEndpointAsync call:
    ``more`` by their API names, those that are None left out (as is an empty ``accept``)."""
    params: dict[str, Any] = {"EndpointName": endpoint, "ContentType": content_type}
    if accept:
        params["Accept"] = accept
    params.update(CustomAttributes=custom_attributes, **more)
    return {name: value for name, value in params.items() if value is not None}


def invoke(
    client: Any,
    endpoint: str,
    body: bytes,
    *,
    content_type: str,
    accept: str | None = None,
    target: Target | None = None,
    custom_attributes: str | None = None,
) -> InvokeResult:
    """InvokeEndpoint; botocore's ClientError propagates."""
    params = _parameters(
        endpoint, content_type, accept, custom_attributes, Body=body, **(target or Target()).parameters()
    )
    response = client.invoke_endpoint(**params)
    return InvokeResult(
        body=response["Body"].read(),
        content_type=response.get("ContentType"),
        invoked_variant=response.get("InvokedProductionVariant"),
        custom_attributes=response.get("CustomAttributes"),
    )


@dataclass(frozen=True)
class StreamResult:
    """An InvokeEndpointWithResponseStream answer: its parts are read as they arrive."""

    parts: Iterator[bytes]
    content_type: str | None
    invoked_variant: str | None


def invoke_stream(
    client: Any,
    endpoint: str,
    body: bytes,
    *,
    content_type: str,
    accept: str | None = None,
    target: Target | None = None,
    custom_attributes: str | None = None,
) -> StreamResult:
    """InvokeEndpointWithResponseStream; errors before the stream are botocore ClientErrors, errors in it
    (ModelStreamError, InternalStreamFailure) botocore EventStreamErrors raised while iterating ``parts``."""
    target = target or Target()
    if target.model is not None:
        raise InvokeError(
            "InvokeEndpointWithResponseStream has no TargetModel: multi-model endpoints do not stream"
        )
    params = _parameters(endpoint, content_type, accept, custom_attributes, Body=body, **target.parameters())
    response = client.invoke_endpoint_with_response_stream(**params)

    def parts() -> Iterator[bytes]:
        for event in response["Body"]:
            part = event.get("PayloadPart")
            if part is not None:
                yield part["Bytes"]

    return StreamResult(
        parts=parts(),
        content_type=response.get("ContentType"),
        invoked_variant=response.get("InvokedProductionVariant"),
    )


def invoke_async(
    client: Any,
    endpoint: str,
    *,
    content_type: str,
    accept: str | None = None,
    body: bytes | None = None,
    input_location: str | None = None,
    custom_attributes: str | None = None,
    inference_id: str | None = None,
) -> AsyncSubmission:
    """InvokeEndpointAsync with an inline ``body`` (<= 128,000 bytes) or an ``input_location``."""
    params = _parameters(
        endpoint,
        content_type,
        accept,
        custom_attributes,
        Body=body,
        InputLocation=input_location,
        InferenceId=inference_id,
    )
    response = client.invoke_endpoint_async(**params)
    return AsyncSubmission(
        inference_id=response["InferenceId"],
        output_location=response["OutputLocation"],
        failure_location=response.get("FailureLocation"),
    )


def wait_for_outcome(
    submission: AsyncSubmission,
    storage: Storage,
    *,
    accept: str | None = None,
    timeout_s: float = DEFAULT_ASYNC_TIMEOUT_S,
    poll_s: float = DEFAULT_POLL_S,
    on_poll: Callable[[float], None] | None = None,
) -> AsyncOutcome:
    """Poll the output and failure locations until one exists (InvokeError after ``timeout_s``); the wait
    between polls grows from 50 ms to ``poll_s``.

    The output's Content-Type is the stored object's (S3); a ``file://`` output has none, so the
    request's ``accept`` stands in for it.
    """
    started = time.monotonic()
    wait = min(FIRST_POLL_S, poll_s)
    while True:
        for location, succeeded in ((submission.output_location, True), (submission.failure_location, False)):
            if location and storage.exists(location):
                body, content_type = storage.read_with_type(location)
                return AsyncOutcome(
                    succeeded, location, body, content_type or (accept if succeeded else "text/plain")
                )
        elapsed = time.monotonic() - started
        if elapsed > timeout_s:
            raise InvokeError(
                f"no output at {submission.output_location} nor failure at {submission.failure_location} "
                f"after {timeout_s:.0f} s (InferenceId {submission.inference_id})"
            )
        if on_poll is not None:
            on_poll(elapsed)
        time.sleep(wait)
        wait = min(wait * 1.5, poll_s)
