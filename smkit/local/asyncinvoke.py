"""Asynchronous inference: InvokeEndpointAsync queues a request; a worker reads its input, runs it and writes
``<S3OutputPath>/<InferenceId>.out`` or ``<S3FailurePath>/<InferenceId>-error.out``.

Semantics (docs/serverless-async.md, botocore ``InvokeEndpointAsync``): exactly one of InputLocation or an
inline Body (<= 128,000 bytes); RequestTTLSeconds 60-21600 (default 6 h) bounds the time in the queue,
InvocationTimeoutSeconds 1-3600 (default 900) the processing time; 202 with InferenceId, OutputLocation and
FailureLocation. At most ``MaxConcurrentInvocationsPerInstance`` x instances run at once. With
notifications on, every outcome is appended to a JSON Lines log in the shape of the SNS message the service
publishes (https://docs.aws.amazon.com/sagemaker/latest/dg/async-inference-check-predictions.html).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from smkit.contract import (
    ASYNC_INLINE_BODY_LIMIT,
    DEFAULT_REQUEST_TTL_S,
    INPUT_LOCATION,
    INVOCATION_TIMEOUT,
    OUTPUT_FILENAME,
    OUTPUT_PATH_EXTENSION,
    REQUEST_TTL,
)
from smkit.contract import DEFAULT_ASYNC_INVOCATION_TIMEOUT_S as DEFAULT_INVOCATION_TIMEOUT_S
from smkit.contract import INVOCATION_TIMEOUT_RANGE_S as INVOCATION_TIMEOUT_RANGE
from smkit.contract import REQUEST_TTL_RANGE_S as REQUEST_TTL_RANGE
from smkit.local.containers import ContainerReply
from smkit.local.error_shapes import RuntimeApiError, validation_error
from smkit.local.runtime_api import Headers, Invocation
from smkit.object_store import Storage, StorageError, check_uri, join

log = logging.getLogger(__name__)

RunInvocation = Callable[[Invocation], Awaitable[tuple[str, ContainerReply]]]


@dataclass(frozen=True)
class AsyncRequest:
    """One accepted InvokeEndpointAsync call."""

    inference_id: str
    invocation: Invocation
    input_location: str | None
    output_location: str
    failure_location: str
    ttl_s: int
    timeout_s: int
    received_monotonic: float
    received_at: datetime


def _seconds(headers: Mapping[str, str], name: str, default: int, bounds: tuple[int, int]) -> int:
    raw = headers.get(name)
    if raw is None:
        return default
    low, high = bounds
    try:
        value = int(raw)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise validation_error(f"{name} must be an integer from {low} to {high} seconds; got {raw!r}.")
    return value


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class AsyncInvocations:
    """The queue and workers of one async endpoint."""

    def __init__(
        self,
        *,
        endpoint: str,
        region: str,
        output_path: str,
        failure_path: str,
        storage: Storage,
        concurrency: int,
        run: RunInvocation,
        notification_log: Path | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.region = region
        self.output_path = output_path
        self.failure_path = failure_path
        self.storage = storage
        self.notification_log = notification_log
        self._run = run
        self._slots = asyncio.Semaphore(concurrency)
        self._tasks: set[asyncio.Task[None]] = set()
        self.succeeded = 0
        self.failed = 0

    def submit(self, headers: Headers, body: bytes) -> AsyncRequest:
        """Validate an InvokeEndpointAsync call and queue it; ValidationError when it is malformed."""
        input_location = headers.get(INPUT_LOCATION)
        if input_location and body:
            raise validation_error("Provide exactly one of InputLocation and Body, not both.")
        if not input_location and not body:
            raise validation_error(
                "InputLocation is required: upload the request to s3://BUCKET/KEY (or pass file:///PATH locally)."
            )
        if len(body) > ASYNC_INLINE_BODY_LIMIT:
            raise validation_error(
                f"An inline Body holds at most {ASYNC_INLINE_BODY_LIMIT} bytes (got {len(body)}); upload the "
                "request and pass its InputLocation instead."
            )
        if input_location:
            try:
                check_uri(input_location, what="InputLocation")
            except StorageError as exc:
                raise validation_error(str(exc)) from exc
        invocation = Invocation.from_headers(headers, body, asynchronous=True)
        inference_id = invocation.inference_id or str(uuid.uuid4())
        extension = headers.get(OUTPUT_PATH_EXTENSION, "")
        filename = headers.get(OUTPUT_FILENAME) or f"{inference_id}.out"
        request = AsyncRequest(
            inference_id=inference_id,
            invocation=invocation,
            input_location=input_location,
            output_location=join(self.output_path, extension, filename),
            failure_location=join(self.failure_path, extension, f"{inference_id}-error.out"),
            ttl_s=_seconds(headers, REQUEST_TTL, DEFAULT_REQUEST_TTL_S, REQUEST_TTL_RANGE),
            timeout_s=_seconds(
                headers, INVOCATION_TIMEOUT, DEFAULT_INVOCATION_TIMEOUT_S, INVOCATION_TIMEOUT_RANGE
            ),
            received_monotonic=time.monotonic(),
            received_at=datetime.now(UTC),
        )
        task = asyncio.create_task(self._process(request), name=f"async-{inference_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return request

    @property
    def pending(self) -> int:
        """Requests queued or running."""
        return len(self._tasks)

    async def _process(self, request: AsyncRequest) -> None:
        try:
            await self._attempt(request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # storage unwritable, gateway bug: record it, keep the queue going
            log.exception("async inference %s failed inside the gateway", request.inference_id)
            with contextlib.suppress(Exception):
                await self._fail(request, f"The local gateway failed: {exc}")

    async def _attempt(self, request: AsyncRequest) -> None:
        async with self._slots:
            if time.monotonic() - request.received_monotonic > request.ttl_s:
                await self._fail(
                    request, f"Request expired: it waited longer than RequestTTLSeconds={request.ttl_s}."
                )
                return
            try:
                body = request.invocation.body
                if request.input_location:
                    body = await asyncio.to_thread(self.storage.read, request.input_location)
                invocation = replace(request.invocation, body=body)
                _variant, reply = await asyncio.wait_for(self._run(invocation), request.timeout_s)
            except StorageError as exc:
                await self._fail(request, f"Failed to read the input: {exc}")
            except RuntimeApiError as exc:
                await self._fail(request, exc.message)
            except TimeoutError:
                await self._fail(
                    request, f"Inference timed out after InvocationTimeoutSeconds={request.timeout_s}."
                )
            else:
                await asyncio.to_thread(
                    self.storage.write, request.output_location, reply.body, content_type=reply.content_type
                )
                self.succeeded += 1
                self._notify(
                    request,
                    status="Completed",
                    response={
                        "contentType": reply.content_type,
                        "outputLocation": request.output_location,
                    },
                )

    async def _fail(self, request: AsyncRequest, reason: str) -> None:
        await asyncio.to_thread(
            self.storage.write, request.failure_location, reason.encode(), content_type="text/plain"
        )
        self.failed += 1
        self._notify(
            request,
            status="Failed",
            response={"failureLocation": request.failure_location},
            failure_reason=reason,
        )

    def _notify(
        self,
        request: AsyncRequest,
        *,
        status: str,
        response: dict[str, str | None],
        failure_reason: str | None = None,
    ) -> None:
        if self.notification_log is None:
            return
        message: dict[str, object] = {
            "awsRegion": self.region,
            "eventTime": _iso(datetime.now(UTC)),
            "receivedTime": _iso(request.received_at),
            "invocationStatus": status,
            "requestParameters": {
                "accept": request.invocation.accept,
                "contentType": request.invocation.content_type,
                "customAttributes": request.invocation.custom_attributes,
                "endpointName": self.endpoint,
                "inputLocation": request.input_location,
            },
            "responseParameters": response,
            "inferenceId": request.inference_id,
            "eventVersion": "1.0",
            "eventSource": "aws:sagemaker",
            "eventName": "InferenceResult",
        }
        if failure_reason is not None:
            message["failureReason"] = failure_reason
        self.notification_log.parent.mkdir(parents=True, exist_ok=True)
        with self.notification_log.open("a", encoding="utf-8") as log:
            log.write(json.dumps(message) + "\n")

    async def join(self, timeout_s: float | None = None) -> None:
        """Wait until every queued request has finished (for tests and clean shutdown)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout_s)

    async def stop(self) -> None:
        """Cancel what is still queued; nothing is half-written (writes are atomic)."""
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
