"""The OpenAI-compatible route of sagemaker-runtime, for endpoints and inference components.

``POST /endpoints/{EndpointName}/openai/v1/chat/completions`` and
``POST /endpoints/{EndpointName}/inference-components/{InferenceComponentName}/openai/v1/chat/completions``
take an OpenAI Chat Completions request with ``Authorization: Bearer sagemaker-api-key-...`` and return the
container's answer as it is, streamed or not
(https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-openai-compatible.html).

What the container receives (docs/openai-compatible.md gives the sources): the request body unchanged (the
``model`` field included) as ``POST /invocations`` with its ``Content-Type`` and ``Accept``, the only routes
every SageMaker container serves; the bearer token is not passed on. The container's answer (JSON, or the
server-sent events of ``"stream": true``) is relayed byte for byte as it arrives, with its Content-Type
(a ``text/`` type without a charset gets ``; charset=utf-8``, as the gateway has always sent it).
The route is engine-agnostic: the same container call as InvokeEndpointWithResponseStream, without the
event-stream framing. A container's 4xx/5xx answer becomes the ModelError every runtime call reports.
The gateway (:mod:`smkit.local.gateway`) finds the route and runs :func:`chat_completions` on its own task.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from smkit.contract import INVOKED_VARIANT, REALTIME_PAYLOAD_LIMIT
from smkit.http1 import Request
from smkit.local.auth import Verifier
from smkit.local.error_shapes import (
    REQUEST_ID_HEADER,
    RuntimeApiError,
    internal_failure,
    new_request_id,
    validation_error,
)
from smkit.local.runtime import EndpointRuntime
from smkit.local.runtime_api import LOCAL_ACCOUNT, Headers, Invocation, request_body
from smkit.local.streaming import relay

log = logging.getLogger(__name__)

CHAT_COMPLETIONS = "openai/v1/chat/completions"


def unserved_openai_path(name: str, operation: str) -> RuntimeApiError:
    """The answer to an OpenAI path other than chat completions (``/v1/models``, ``/v1/completions``, ...):
    SageMaker's OpenAI-compatible route serves chat completions only; the error names that route."""
    component = ""
    if operation.startswith("inference-components/"):
        component = "/inference-components/" + operation.split("/", 2)[1]
    route = f"POST /endpoints/{name}{component}/{CHAT_COMPLETIONS}"
    return RuntimeApiError(
        "UnknownOperationException",
        f"/endpoints/{name}/{operation} is not served: SageMaker's OpenAI-compatible route is {route} only "
        "(https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-openai-compatible.html); "
        "call it with the OpenAI client's chat.completions.create",
        status=404,
    )


def _media_type(content_type: str) -> str:
    if content_type.startswith("text/") and "charset=" not in content_type.lower():
        return content_type + "; charset=utf-8"
    return content_type


async def chat_completions(
    request: Request,
    endpoints: Mapping[str, EndpointRuntime],
    tokens: Verifier,
    name: str,
    component: str | None,
) -> None:
    """Answer one chat-completions ``request`` for endpoint ``name`` (and ``component``), bearer token
    checked by ``tokens``."""
    request_id = new_request_id()
    try:
        endpoint = endpoints.get(name)
        body = request_body(request, endpoint.payload_limit if endpoint else REALTIME_PAYLOAD_LIMIT)
        headers = Headers.of(request.headers)
        tokens.check_bearer(headers.get("authorization"))
        if endpoint is None:
            raise validation_error(f"Endpoint {name} of account {LOCAL_ACCOUNT} not found.")
        invocation = Invocation(
            body=body,
            content_type=headers.get("content-type"),
            accept=headers.get("accept"),
            inference_component=component,
            stream=True,
        )
        variant, reply = await endpoint.invoke(invocation)
    except RuntimeApiError as err:
        request.respond(*err.to_response(request_id))
        return
    except Exception:
        log.exception("the OpenAI-compatible route failed inside the gateway")
        request.respond(*internal_failure("The local gateway failed; see its log.").to_response(request_id))
        return
    fields: list[tuple[bytes | str, bytes | str]] = [
        (INVOKED_VARIANT, variant),
        (REQUEST_ID_HEADER, request_id),
    ]
    if reply.content_type:
        fields.insert(0, (b"content-type", _media_type(reply.content_type)))
    if reply.stream is None:
        request.respond(200, fields, reply.body)
        return
    await relay(request, fields, reply.stream.chunks(), reply.stream)
