"""InvokeEndpointWithResponseStream behind the gateway: a container's streamed answer as event-stream events.

``POST /endpoints/{EndpointName}/invocations-response-stream`` takes the InvokeEndpoint request (Accept as
``X-Amzn-SageMaker-Accept``, no TargetModel) and routes it like InvokeEndpoint: variants and TargetVariant,
inference components, pipelines (the last container streams), direct containers. Errors before the
container's answer has started are the usual error responses (ValidationError, ModelError for a 4xx/5xx
answer, ...). Once it has started, the answer is HTTP 200 ``application/vnd.amazon.eventstream`` and
every piece of body the container writes is sent at once as a ``PayloadPart`` event
(:mod:`smkit.local.eventstream`); a container that does not stream (a ``Content-Length`` answer) arrives as
its body's parts. A container that cuts its answer off ends the stream with a ``ModelStreamError`` event:
``ErrorCode`` ``ModelInvocationTimeExceeded`` when the container's invocation limit had run out (or it sent
nothing for 60 s), else ``StreamBroken``
(https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_runtime_ResponseStream.html). The client
reading slowly slows the container down (each event is sent before more of the body is read).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from smkit.http1 import Flow, Request
from smkit.http1.responses import Headers
from smkit.local import eventstream
from smkit.local.containers import ContainerStream
from smkit.local.error_shapes import internal_failure
from smkit.local.upstream import UpstreamError, UpstreamTimeout

log = logging.getLogger(__name__)
MEDIA_TYPE = "application/vnd.amazon.eventstream"
CONTENT_TYPE_HEADER = "X-Amzn-SageMaker-Content-Type"


def _timed_out(source: str) -> bytes:
    return eventstream.exception(
        eventstream.MODEL_STREAM_ERROR,
        f"Your model {source} did not complete sending the inference response in the allotted time.",
        ErrorCode=eventstream.INVOCATION_TIME_EXCEEDED,
    )


async def events(stream: ContainerStream, *, source: str, variant: str) -> AsyncIterator[bytes]:
    """The event-stream messages of ``stream`` (the caller closes the stream)."""
    try:
        async for data in stream.chunks():
            for part in eventstream.payload_parts(data):
                yield part
    except UpstreamTimeout:
        yield _timed_out(source)
    except UpstreamError as exc:
        if stream.past_limit():
            yield _timed_out(source)
        else:
            yield eventstream.exception(
                eventstream.MODEL_STREAM_ERROR,
                f"The model {source} of variant {variant} closed the connection before the end of the "
                f"response stream ({exc}); see the container's log for the handler's error.",
                ErrorCode=eventstream.STREAM_BROKEN,
            )
    except Exception:
        log.exception("InvokeEndpointWithResponseStream failed inside the gateway")
        yield eventstream.exception(
            eventstream.INTERNAL_STREAM_FAILURE, "The local gateway failed while streaming; see its log."
        )


async def relay(
    request: Request, headers: Headers, body: AsyncIterator[bytes], stream: ContainerStream
) -> None:
    """Answer ``request`` 200 with ``body`` streamed (chunked) as it comes; ``stream`` (the container's
    answer ``body`` reads) is closed however it ends: done, failed, or the client gone (the handler
    cancels this coroutine then). Each piece is written before the next is read, and reading waits while
    the client's connection buffer is full: a slow client slows the container down. An error out of
    ``body`` ends the answer without its last chunk (an incomplete body to every client)."""
    flow = Flow()
    error: str | None = None
    try:
        request.stream(200, headers, flow=flow)
    except ValueError:  # a header the container sent cannot be sent on (smkit.http1.responses)
        log.exception("a streamed answer's head failed inside the gateway")
        await stream.aclose()
        request.respond(*internal_failure("The local gateway failed; see its log.").to_response())
        return
    try:
        async for data in body:
            if request.ended:
                break
            request.write(data)
            await flow.wait()
    except UpstreamError as exc:
        error = str(exc)
    except Exception as exc:
        log.exception("a streamed answer failed inside the gateway")
        error = repr(exc)
    finally:
        await stream.aclose()
    request.finish(error)
