"""The SageMaker Runtime REST API in front of local endpoints: the request handler of the gateway's server.

``POST /endpoints/{EndpointName}/invocations`` (InvokeEndpoint),
``POST /endpoints/{EndpointName}/invocations-response-stream`` (InvokeEndpointWithResponseStream,
:mod:`smkit.local.streaming`),
``POST /endpoints/{EndpointName}/async-invocations`` (InvokeEndpointAsync), the OpenAI-compatible route
(:mod:`smkit.local.openai_route`) and ``GET /ping``, with the service's headers and error shapes, so an
unmodified ``boto3.client("sagemaker-runtime", endpoint_url=...)`` talks to it. ``POST
.../invocations-bidirectional-stream`` is answered at once with the reason it is not emulated.

:class:`Gateway` is a :class:`smkit.http1.Handler`: the kit's HTTP/1.1 server hands it each request once
its body has arrived, with no ASGI scope, receive/send channels or middleware in between; the route is
found from the path by string operations. Every invocation runs on its own task, so a slow container holds
only its own callers. Any failure becomes an error response; the gateway keeps serving.

With ``verifier`` given, every runtime call's SigV4 signature is checked before anything else
(:mod:`smkit.local.auth`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Coroutine, Mapping
from typing import Any

from smkit.contract import (
    ASYNC_INLINE_BODY_LIMIT,
    CUSTOM_ATTRIBUTES,
    CUSTOM_ATTRIBUTES_LIMIT,
    FAILURE_LOCATION,
    INVOKED_VARIANT,
    OUTPUT_LOCATION,
    REALTIME_PAYLOAD_LIMIT,
)
from smkit.http1 import Handler, Request
from smkit.http1.responses import header_lines
from smkit.local.auth import Verifier
from smkit.local.error_shapes import (
    ERROR_TYPE_HEADER,
    JSON,
    REQUEST_ID_HEADER,
    Response,
    RuntimeApiError,
    internal_failure,
    new_request_id,
    validation_error,
)
from smkit.local.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from smkit.local.metrics import endpoint_metrics
from smkit.local.openai_route import CHAT_COMPLETIONS, chat_completions, unserved_openai_path
from smkit.local.runtime import EndpointRuntime
from smkit.local.runtime_api import LOCAL_ACCOUNT, Headers, Invocation, request_body
from smkit.local.streaming import CONTENT_TYPE_HEADER, MEDIA_TYPE, events, relay

log = logging.getLogger(__name__)

ENDPOINTS = "/endpoints/"
COMPONENTS = "inference-components/"
_INVOKED_VARIANT = INVOKED_VARIANT.encode()
_REQUEST_ID = REQUEST_ID_HEADER.encode()
_REQUEST_ID_LINE = _REQUEST_ID + b": "
_CUSTOM_ATTRIBUTES = CUSTOM_ATTRIBUTES.encode()
_NOT_FOUND = Response(404, [(b"content-type", b"text/plain; charset=utf-8")], b"Not Found")
BIDIRECTIONAL_MESSAGE = (
    "InvokeEndpointWithBidirectionalStream (sagemaker-runtime-http2) is not emulated by the local "
    "endpoint: it needs HTTP/2, which AWS's client negotiates only over TLS. Test bidirectional_fn "
    "with a WebSocket client against the container (smkit serve, path /invocations-bidirectional-stream); "
    "see docs/streaming.md."
)


def _check_custom_attributes(custom: str | None) -> None:
    if custom is not None and (len(custom) > CUSTOM_ATTRIBUTES_LIMIT or not custom.isascii()):
        raise validation_error(
            f"CustomAttributes must be at most {CUSTOM_ATTRIBUTES_LIMIT} visible US-ASCII characters "
            f"(got {len(custom)} characters)."
        )


def authenticate(verifier: Verifier, request: Request, headers: Headers, body: bytes) -> None:
    """Check the request's SigV4 signature over the target and body exactly as they arrived."""
    raw_path, _, query = request.target.decode("latin-1").partition("?")
    verifier.check_request(
        method=request.method,
        host=headers.get("host", ""),
        raw_path=raw_path,
        query=query.partition("#")[0],
        headers=headers,
        body=body,
    )


# The success head's own lines, by variant name: the name is checked once (it is a config name, the
# pattern of VariantName), then every call to the variant reuses its line.
_VARIANT_LINES: dict[str, bytes] = {}


def _variant_line(variant: str) -> bytes:
    line = _VARIANT_LINES.get(variant)
    if line is None:
        line = _VARIANT_LINES[variant] = header_lines([(_INVOKED_VARIANT, variant)])
    return line


def _unknown_endpoint(name: str) -> RuntimeApiError:
    return validation_error(f"Endpoint {name} of account {LOCAL_ACCOUNT} not found.")


def _method_not_allowed(allowed: bytes) -> Response:
    return Response(
        405, [(b"content-type", b"text/plain; charset=utf-8"), (b"allow", allowed)], b"Method Not Allowed"
    )


def _error_answer(exc: Exception, request_id: str, action: str) -> Any:
    """The response to a failed call: the service's error it raised, else an InternalFailure of ``action``."""
    if isinstance(exc, RuntimeApiError):
        return exc.to_response(request_id)
    return _failed(action).to_response(request_id)


def _failed(operation: str) -> RuntimeApiError:
    log.exception("%s failed inside the gateway", operation)
    return internal_failure("The local gateway failed; see its log.")


class Gateway(Handler):
    """The gateway serving ``endpoints`` (by name).

    ``verifier``: check SigV4 on every runtime call (None: any or no signature is accepted).
    ``tokens``: checks the bearer tokens of the OpenAI-compatible route (None: that route is not served).
    """

    def __init__(
        self,
        endpoints: Mapping[str, EndpointRuntime],
        *,
        verifier: Verifier | None = None,
        tokens: Verifier | None = None,
    ) -> None:
        self.endpoints = endpoints
        self.verifier = verifier
        self.tokens = tokens
        # The server keeps bodies up to the largest limit a route has; each route checks its own.
        self.max_body = max(
            [REALTIME_PAYLOAD_LIMIT, ASYNC_INLINE_BODY_LIMIT, *(e.payload_limit for e in endpoints.values())]
        )
        # The name of this gateway's invocation tasks: asyncio keeps every task of the loop (all_tasks), so
        # cancel() finds them by name, with no set and done-callback of its own on every relayed call.
        self.task_name = f"smkit gateway {id(self):x} invocation"
        # Invocations whose client left and that run on: held here, as their request no longer holds them.
        self._orphans: set[asyncio.Task[None]] = set()

    # --- dispatch ---------------------------------------------------------------------------------------

    def request(self, request: Request) -> None:
        path = request.path
        if path.startswith(ENDPOINTS):
            name, slash, operation = path[len(ENDPOINTS) :].partition("/")
            if name and slash:
                self._endpoint_route(request, name, operation)
                return
        elif path == "/ping":
            if request.method in ("GET", "HEAD"):
                body = json.dumps({"endpoints": sorted(self.endpoints)}).encode()
                request.respond(200, [(b"content-type", JSON)], body)
            else:
                request.respond(*_method_not_allowed(b"GET, HEAD"))
            return
        request.respond(*_NOT_FOUND)

    def _endpoint_route(self, request: Request, name: str, operation: str) -> None:
        job: Coroutine[Any, Any, None]
        if operation == "invocations":
            job = self._invoke(request, name)
        elif operation == "invocations-response-stream":
            job = self._response_stream(request, name)
        elif operation == "async-invocations":
            job = self._invoke_async(request, name)
        elif operation == "invocations-bidirectional-stream":
            if request.method != "POST":
                request.respond(*_method_not_allowed(b"POST"))
            else:
                request.respond(*self._bidirectional())
            return
        elif operation == "metrics":  # each container's Prometheus metrics (smkit/local/metrics.py)
            if request.method != "GET":
                request.respond(*_method_not_allowed(b"GET"))
                return
            request.app = request.conn.loop.create_task(self._metrics(request, name), name=self.task_name)
            return
        elif self.tokens is not None and (component := _chat_target(operation)) is not None:
            job = chat_completions(request, self.endpoints, self.tokens, name, component or None)
        elif self.tokens is not None and _openai_path(operation):
            request.respond(*unserved_openai_path(name, operation).to_response())
            return
        else:
            request.respond(*_NOT_FOUND)
            return
        if request.method != "POST":
            job.close()
            request.respond(*_method_not_allowed(b"POST"))
            return
        # The connection's loop, not asyncio.get_running_loop(): in Python 3.11 that function checks the
        # process id with a getpid() system call each time it is called.
        request.app = request.conn.loop.create_task(job, name=self.task_name)

    def waiting(self, request: Request) -> None:
        # The bidirectional refusal is answered before any body: a client of that API streams its events
        # for as long as the session lasts, so its body never ends. The connection closes after it.
        path = request.path
        bidirectional = path.endswith("/invocations-bidirectional-stream") and path.startswith(ENDPOINTS)
        if bidirectional and request.method == "POST" and not request.answered:
            request.respond(*self._bidirectional(), close=True)

    def aborted(self, request: Request) -> None:
        # The client left: a streamed answer stops reading its container (the relay closes the stream);
        # a plain invocation runs to its end, as the container's work is under way anyway.
        task = request.app
        if task is None or task.done():
            return
        if request.streaming:
            task.cancel()
        else:
            self._orphans.add(task)
            task.add_done_callback(self._orphans.discard)

    async def cancel(self) -> None:
        """Cancel the invocations still running once the server has stopped (after its grace period) and
        wait for them to end: their container connections are closed before the containers stop."""
        tasks = [task for task in asyncio.all_tasks() if task.get_name() == self.task_name]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    # --- routes ---------------------------------------------------------------------------------------------

    async def _metrics(self, request: Request, name: str) -> None:
        endpoint = self.endpoints.get(name)
        if endpoint is None:
            request.respond(*_NOT_FOUND)
            return
        body = await endpoint_metrics(endpoint.metric_targets())
        if not request.answered:
            request.respond(200, [(b"content-type", METRICS_CONTENT_TYPE.encode())], body)

    async def _call(self, request: Request, name: str, *, stream: bool = False) -> tuple[str, Any]:
        """One invocation of endpoint ``name`` (its body read, its signature checked): the variant that
        answered and its reply."""
        endpoint = self.endpoints.get(name)
        body = request_body(request, endpoint.payload_limit if endpoint else REALTIME_PAYLOAD_LIMIT)
        if self.verifier is not None:
            authenticate(self.verifier, request, Headers.of(request.headers), body)
        if endpoint is None:
            raise _unknown_endpoint(name)
        invocation = Invocation.from_fields(request.headers, body, stream=stream)
        _check_custom_attributes(invocation.custom_attributes)
        return await endpoint.invoke(invocation)

    async def _invoke(self, request: Request, name: str) -> None:
        request_id = new_request_id()
        try:
            variant, reply = await self._call(request, name)
            # The head's lines, encoded here: the variant's line is checked once per variant, the request
            # id is ours, and the Content-Type is the container's as llhttp parsed it (a parsed value holds
            # no CR, LF or other control character). What else the container sent is checked as usual.
            lines = _variant_line(variant) + _REQUEST_ID_LINE + request_id.encode() + b"\r\n"
            if reply.content_type:
                lines += b"content-type: " + reply.content_type.encode("latin-1") + b"\r\n"
            fields: list[tuple[bytes | str, bytes | str]] = []
            if reply.custom_attributes is not None:
                fields.append((_CUSTOM_ATTRIBUTES, reply.custom_attributes))
            fields.extend(
                reply.session_headers.items()
            )  # NewSessionId, ClosedSessionId (smkit/local/sticky_sessions.py)
            request.respond(200, fields, reply.body, lines=lines)
        except Exception as exc:
            request.respond(*_error_answer(exc, request_id, "InvokeEndpoint"))

    async def _invoke_async(self, request: Request, name: str) -> None:
        request_id = new_request_id()
        try:
            body = request_body(request, ASYNC_INLINE_BODY_LIMIT)
            headers = Headers.of(request.headers)
            if self.verifier is not None:
                authenticate(self.verifier, request, headers, body)
            endpoint = self.endpoints.get(name)
            if endpoint is None:
                raise _unknown_endpoint(name)
            _check_custom_attributes(headers.get(CUSTOM_ATTRIBUTES))
            queued = endpoint.submit(headers, body)
            fields: list[tuple[bytes | str, bytes | str]] = [
                (b"content-type", JSON),
                (OUTPUT_LOCATION, queued.output_location),
                (FAILURE_LOCATION, queued.failure_location),
                (_REQUEST_ID, request_id),
            ]
            request.respond(202, fields, json.dumps({"InferenceId": queued.inference_id}).encode())
        except Exception as exc:
            request.respond(*_error_answer(exc, request_id, "InvokeEndpointAsync"))

    async def _response_stream(self, request: Request, name: str) -> None:
        request_id = new_request_id()
        try:
            variant, reply = await self._call(request, name, stream=True)
            stream = reply.stream
            if stream is None:
                raise internal_failure("The container's answer could not be streamed.")
        except Exception as exc:
            request.respond(*_error_answer(exc, request_id, "InvokeEndpointWithResponseStream"))
            return
        fields: list[tuple[bytes | str, bytes | str]] = [
            (b"content-type", MEDIA_TYPE),
            (_INVOKED_VARIANT, variant),
            (_REQUEST_ID, request_id),
        ]
        if reply.content_type:
            fields.append((CONTENT_TYPE_HEADER, reply.content_type))
        if reply.custom_attributes is not None:
            fields.append((_CUSTOM_ATTRIBUTES, reply.custom_attributes))
        await relay(request, fields, events(stream, source="primary", variant=variant), stream)

    @staticmethod
    def _bidirectional() -> Response:
        # Answered at once, before any body: AWS's client sends this request over HTTP/2 only, so what
        # arrives here is a client that can never stream its events to this endpoint. The error is the
        # sagemaker-runtime-http2 service's own InputValidationError, which its client surfaces by name.
        body = json.dumps({"Message": BIDIRECTIONAL_MESSAGE, "ErrorCode": "NotEmulated"}).encode()
        headers = [
            (b"content-type", JSON),
            (ERROR_TYPE_HEADER.encode(), b"InputValidationError"),
            (_REQUEST_ID, new_request_id().encode()),
        ]
        return Response(400, headers, body)


def _openai_path(operation: str) -> bool:
    """Whether ``operation`` is under an endpoint's or a component's ``openai/`` prefix."""
    if operation.startswith(COMPONENTS):
        operation = operation[len(COMPONENTS) :].partition("/")[2]
    return operation.startswith("openai/")


def _chat_target(operation: str) -> str | None:
    """``""`` for the endpoint's chat-completions route, the component's name for a component's, else None."""
    if operation == CHAT_COMPLETIONS:
        return ""
    if operation.startswith(COMPONENTS) and operation.endswith("/" + CHAT_COMPLETIONS):
        component = operation[len(COMPONENTS) : -len(CHAT_COMPLETIONS) - 1]
        if component and "/" not in component:
            return component
    return None
