"""The SageMaker Runtime REST API in front of local endpoints (an ASGI app for uvicorn).

``POST /endpoints/{EndpointName}/invocations`` (InvokeEndpoint),
``POST /endpoints/{EndpointName}/invocations-response-stream`` (InvokeEndpointWithResponseStream,
:mod:`smkit.local.streaming`) and
``POST /endpoints/{EndpointName}/async-invocations`` (InvokeEndpointAsync), with the service's headers and
error shapes, so an unmodified ``boto3.client("sagemaker-runtime", endpoint_url=...)`` talks to it. Every
request is handled on its own task: a slow container holds only its own callers. Any failure becomes an
error response; the gateway keeps serving.

With ``verifier`` given, every runtime call's SigV4 signature is checked before anything else
(:mod:`smkit.local.auth`).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from smkit.contract import (
    ASYNC_INLINE_BODY_LIMIT,
    CUSTOM_ATTRIBUTES,
    CUSTOM_ATTRIBUTES_LIMIT,
    DRAIN_LIMIT,
    FAILURE_LOCATION,
    INVOKED_VARIANT,
    OUTPUT_LOCATION,
    REALTIME_PAYLOAD_LIMIT,
)
from smkit.local.auth import Verifier
from smkit.local.errors import (
    ERROR_TYPE_HEADER,
    REQUEST_ID_HEADER,
    RuntimeApiError,
    internal_failure,
    payload_too_large,
    validation_error,
)
from smkit.local.protocol import LOCAL_ACCOUNT, Invocation
from smkit.local.runtime import EndpointRuntime
from smkit.local.streaming import CONTENT_TYPE_HEADER, EventStreamResponse

log = logging.getLogger(__name__)


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, or 413 when it is larger than ``limit`` (after draining it, so the client sees
    the answer instead of a reset connection)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size <= limit:
            chunks.append(chunk)
        elif size > DRAIN_LIMIT:
            break
    if size > limit:
        raise payload_too_large(limit)
    return b"".join(chunks)


def _check_headers(headers: Mapping[str, str]) -> None:
    custom = headers.get(CUSTOM_ATTRIBUTES)
    if custom is not None and (len(custom) > CUSTOM_ATTRIBUTES_LIMIT or not custom.isascii()):
        raise validation_error(
            f"CustomAttributes must be at most {CUSTOM_ATTRIBUTES_LIMIT} visible US-ASCII characters "
            f"(got {len(custom)} characters)."
        )


def authenticate(verifier: Verifier, request: Request, body: bytes) -> None:
    """Check the request's SigV4 signature over the target and body exactly as they arrived."""
    verifier.check_request(
        method=request.method,
        host=request.headers.get("host", ""),
        raw_path=request.scope.get("raw_path", request.url.path.encode()).decode("latin-1"),
        query=request.scope.get("query_string", b"").decode("latin-1"),
        headers=request.headers,
        body=body,
    )


def _unknown_endpoint(name: str) -> RuntimeApiError:
    return validation_error(f"Endpoint {name} of account {LOCAL_ACCOUNT} not found.")


Lifespan = Callable[[Starlette], AbstractAsyncContextManager[None]]


def create_app(
    endpoints: Mapping[str, EndpointRuntime],
    *,
    lifespan: Lifespan | None = None,
    verifier: Verifier | None = None,
    routes: Sequence[Route] = (),
) -> Starlette:
    """The gateway app serving ``endpoints`` (by name).

    ``verifier``: check SigV4 on every runtime call (None: any or no signature is accepted).
    ``routes``: more routes (the OpenAI-compatible route, :func:`smkit.local.openai_route.openai_routes`).
    """

    def check(request: Request, body: bytes) -> None:
        if verifier is not None:
            authenticate(verifier, request, body)

    async def invocations(request: Request) -> Response:
        request_id = str(uuid.uuid4())
        try:
            name = request.path_params["name"]
            endpoint = endpoints.get(name)
            body = await read_body(request, endpoint.payload_limit if endpoint else REALTIME_PAYLOAD_LIMIT)
            check(request, body)
            if endpoint is None:
                raise _unknown_endpoint(name)
            _check_headers(request.headers)
            variant, reply = await endpoint.invoke(Invocation.from_headers(request.headers, body))
            headers = {INVOKED_VARIANT: variant, REQUEST_ID_HEADER: request_id}
            if reply.content_type:
                headers["Content-Type"] = reply.content_type
            if reply.custom_attributes is not None:
                headers[CUSTOM_ATTRIBUTES] = reply.custom_attributes
            headers.update(reply.session_headers)  # NewSessionId, ClosedSessionId (smkit/local/sessions.py)
            return Response(reply.body, status_code=200, headers=headers)
        except RuntimeApiError as err:
            return err.to_response(request_id)
        except Exception:
            log.exception("InvokeEndpoint failed inside the gateway")
            return internal_failure("The local gateway failed; see its log.").to_response(request_id)

    async def async_invocations(request: Request) -> Response:
        request_id = str(uuid.uuid4())
        try:
            name = request.path_params["name"]
            body = await read_body(request, ASYNC_INLINE_BODY_LIMIT)
            check(request, body)
            endpoint = endpoints.get(name)
            if endpoint is None:
                raise _unknown_endpoint(name)
            _check_headers(request.headers)
            queued = endpoint.submit(request.headers, body)
            return Response(
                json.dumps({"InferenceId": queued.inference_id}),
                status_code=202,
                media_type="application/json",
                headers={
                    OUTPUT_LOCATION: queued.output_location,
                    FAILURE_LOCATION: queued.failure_location,
                    REQUEST_ID_HEADER: request_id,
                },
            )
        except RuntimeApiError as err:
            return err.to_response(request_id)
        except Exception:
            log.exception("InvokeEndpointAsync failed inside the gateway")
            return internal_failure("The local gateway failed; see its log.").to_response(request_id)

    async def response_stream(request: Request) -> Response:
        request_id = str(uuid.uuid4())
        try:
            name = request.path_params["name"]
            endpoint = endpoints.get(name)
            body = await read_body(request, endpoint.payload_limit if endpoint else REALTIME_PAYLOAD_LIMIT)
            check(request, body)
            if endpoint is None:
                raise _unknown_endpoint(name)
            _check_headers(request.headers)
            invocation = Invocation.from_headers(request.headers, body, stream=True)
            variant, reply = await endpoint.invoke(invocation)
            if reply.stream is None:
                raise internal_failure("The container's answer could not be streamed.")
            headers = {INVOKED_VARIANT: variant, REQUEST_ID_HEADER: request_id}
            if reply.content_type:
                headers[CONTENT_TYPE_HEADER] = reply.content_type
            if reply.custom_attributes is not None:
                headers[CUSTOM_ATTRIBUTES] = reply.custom_attributes
            return EventStreamResponse(reply.stream, variant=variant, headers=headers)
        except RuntimeApiError as err:
            return err.to_response(request_id)
        except Exception:
            log.exception("InvokeEndpointWithResponseStream failed inside the gateway")
            return internal_failure("The local gateway failed; see its log.").to_response(request_id)

    async def bidirectional(request: Request) -> Response:
        # Answered at once, before any body: AWS's client sends this request over HTTP/2 only, so what
        # arrives here is a client that can never stream its events to this endpoint. The error is the
        # sagemaker-runtime-http2 service's own InputValidationError, which its client surfaces by name.
        message = (
            "InvokeEndpointWithBidirectionalStream (sagemaker-runtime-http2) is not emulated by the local "
            "endpoint: it needs HTTP/2, which AWS's client negotiates only over TLS. Test bidirectional_fn "
            "with a WebSocket client against the container (smkit serve, path /invocations-bidirectional-stream); "
            "see docs/streaming.md."
        )
        return Response(
            json.dumps({"Message": message, "ErrorCode": "NotEmulated"}),
            status_code=400,
            media_type="application/json",
            headers={ERROR_TYPE_HEADER: "InputValidationError", REQUEST_ID_HEADER: str(uuid.uuid4())},
        )

    async def ping(request: Request) -> Response:
        return Response(json.dumps({"endpoints": sorted(endpoints)}), media_type="application/json")

    return Starlette(
        routes=[
            Route("/endpoints/{name}/invocations", invocations, methods=["POST"]),
            Route("/endpoints/{name}/async-invocations", async_invocations, methods=["POST"]),
            Route("/endpoints/{name}/invocations-response-stream", response_stream, methods=["POST"]),
            Route("/endpoints/{name}/invocations-bidirectional-stream", bidirectional, methods=["POST"]),
            Route("/ping", ping, methods=["GET"]),
            *routes,
        ],
        lifespan=lifespan,
    )
