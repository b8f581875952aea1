"""The OpenAI-compatible route of sagemaker-runtime, for endpoints and inference components.

``POST /endpoints/{EndpointName}/openai/v1/chat/completions`` and
``POST /endpoints/{EndpointName}/inference-components/{InferenceComponentName}/openai/v1/chat/completions``
take an OpenAI Chat Completions request with ``Authorization: Bearer sagemaker-api-key-...`` and return the
container's answer as it is, streamed or not
(https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-openai-compatible.html).

What the container receives (docs/openai-compatible.md gives the sources): the request body unchanged (the
``model`` field included) as ``POST /invocations`` with its ``Content-Type`` and ``Accept``, the only routes
every SageMaker container serves; the bearer token is not passed on. The container's answer (JSON, or the
server-sent events of ``"stream": true``) is relayed byte for byte as it arrives, with its Content-Type.
The route is engine-agnostic: the same container call as InvokeEndpointWithResponseStream, without the
event-stream framing. A container's 4xx/5xx answer becomes the ModelError every runtime call reports.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Mapping

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from smkit.contract import INVOKED_VARIANT, REALTIME_PAYLOAD_LIMIT
from smkit.local.auth import Verifier
from smkit.local.containers import ContainerStream
from smkit.local.errors import REQUEST_ID_HEADER, RuntimeApiError, internal_failure, validation_error
from smkit.local.gateway import read_body
from smkit.local.protocol import LOCAL_ACCOUNT, Invocation
from smkit.local.runtime import EndpointRuntime

log = logging.getLogger(__name__)

CHAT_COMPLETIONS = "/openai/v1/chat/completions"
ENDPOINT_PATH = "/endpoints/{name}" + CHAT_COMPLETIONS
COMPONENT_PATH = "/endpoints/{name}/inference-components/{component}" + CHAT_COMPLETIONS


async def _relay(stream: ContainerStream) -> AsyncIterator[bytes]:
    try:
        async for chunk in stream.chunks():
            yield chunk
    finally:
        await stream.aclose()


def openai_routes(endpoints: Mapping[str, EndpointRuntime], tokens: Verifier) -> list[Route]:
    """The two chat-completions routes for ``endpoints``, bearer tokens checked by ``tokens``."""

    async def chat_completions(request: Request) -> Response:
        request_id = str(uuid.uuid4())
        try:
            name = request.path_params["name"]
            endpoint = endpoints.get(name)
            body = await read_body(request, endpoint.payload_limit if endpoint else REALTIME_PAYLOAD_LIMIT)
            tokens.check_bearer(request.headers.get("authorization"))
            if endpoint is None:
                raise validation_error(f"Endpoint {name} of account {LOCAL_ACCOUNT} not found.")
            invocation = Invocation(
                body=body,
                content_type=request.headers.get("content-type"),
                accept=request.headers.get("accept"),
                inference_component=request.path_params.get("component"),
                stream=True,
            )
            variant, reply = await endpoint.invoke(invocation)
            headers = {INVOKED_VARIANT: variant, REQUEST_ID_HEADER: request_id}
            if reply.stream is None:
                return Response(reply.body, media_type=reply.content_type, headers=headers)
            return StreamingResponse(_relay(reply.stream), media_type=reply.content_type, headers=headers)
        except RuntimeApiError as err:
            return err.to_response(request_id)
        except Exception:
            log.exception("the OpenAI-compatible route failed inside the gateway")
            return internal_failure("The local gateway failed; see its log.").to_response(request_id)

    return [
        Route(ENDPOINT_PATH, chat_completions, methods=["POST"]),
        Route(COMPONENT_PATH, chat_completions, methods=["POST"]),
    ]
