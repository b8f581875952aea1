"""How one production variant turns an invocation into container calls, per model shape.

- :class:`SingleContainer`: one container, ``POST /invocations``.
- :class:`SerialPipeline`: containers chained (docs/multi-container.md): the client's Content-Type to the
  first, its Accept to the last, each hop fed the previous response with that response's Content-Type
  verbatim (parameters such as charset included), as SageMaker forwards it.
- :class:`DirectContainers`: ``TargetContainerHostname`` picks the container (docs/multi-container.md).
- :class:`~smkit.local.target_model.MultiModel` (own module): ``TargetModel`` loads on first use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from smkit.local.containers import ContainerProcess, ContainerReply
from smkit.local.error_shapes import RuntimeApiError, model_error, service_unavailable, validation_error
from smkit.local.runtime_api import LOCAL_ACCOUNT, Invocation
from smkit.local.upstream import UpstreamError, UpstreamTimeout


@dataclass(frozen=True)
class Scope:
    """Where an invocation runs, for error messages that point at the right log."""

    endpoint: str
    variant: str
    region: str

    def log_stream_arn(self, process: ContainerProcess) -> str:
        """The CloudWatch log stream ARN the service would name for this container."""
        return (
            f"arn:aws:logs:{self.region}:{LOCAL_ACCOUNT}:log-group:/aws/sagemaker/Endpoints/{self.endpoint}"
            f":log-stream:{self.variant}/{process.label}"
        )

    def container_error(
        self, reply: ContainerReply, *, source: str, process: ContainerProcess
    ) -> RuntimeApiError:
        """The 424 ModelError the service returns when a container answers 4xx/5xx."""
        log_hint = str(process.log_path) if process.log_path else f"the output of container {process.label}"
        return model_error(
            original_status=reply.status,
            original_message=reply.body.decode("utf-8", errors="replace"),
            source=source,
            log_stream_arn=self.log_stream_arn(process),
            log_hint=log_hint,
        )

    def timeout_error(self, *, source: str, process: ContainerProcess) -> RuntimeApiError:
        """What the service reports when a container does not answer within 60 s (status 0)."""
        message = (
            f"Your invocation timed out while waiting for a response from container {source}. Review the "
            "latency metrics for each container in Amazon CloudWatch, resolve the issue, and try again."
        )
        log_hint = str(process.log_path) if process.log_path else f"the output of container {process.label}"
        return model_error(
            original_status=0,
            original_message=message,
            source=source,
            log_stream_arn=self.log_stream_arn(process),
            log_hint=log_hint,
        )


async def call_container(
    process: ContainerProcess,
    path: str,
    body: bytes,
    headers: dict[str, str],
    *,
    scope: Scope,
    source: str,
    stream: bool = False,
) -> ContainerReply:
    """POST to a container; a 4xx/5xx answer or a timeout becomes the ModelError the service sends.

    ``stream``: return once the head has arrived, with the body in ``reply.stream``.
    """
    try:
        if stream:
            reply = await process.open_stream(path, body=body, headers=headers)
        else:
            reply = await process.request("POST", path, body=body, headers=headers)
    except UpstreamTimeout:
        raise scope.timeout_error(source=source, process=process) from None
    except UpstreamError as exc:
        # Whether the process still lives is asked once a call failed, not before every call (a wait()
        # system call per relayed call): a container that exited refuses the connection.
        if not process.running:
            raise service_unavailable(
                f"Container {source} of variant {scope.variant} is not running; restart the local endpoint."
            ) from None
        raise service_unavailable(
            f"Container {source} of variant {scope.variant} did not answer: {exc}"
        ) from exc
    if not reply.ok:
        raise scope.container_error(reply, source=source, process=process)
    return reply


class Router(Protocol):
    """The invocation strategy of a variant's model."""

    def validate(self, invocation: Invocation) -> None:
        """Raise ValidationError for headers this model shape cannot honour (before any work is done)."""

    async def invoke(self, invocation: Invocation, scope: Scope) -> ContainerReply:
        """Run the invocation and return the reply that goes back to the client."""


def reject_target_model(invocation: Invocation, endpoint: str) -> None:
    """ValidationError when TargetModel is set on an endpoint that is not multi-model."""
    if invocation.target_model is not None:
        raise validation_error(
            f"Endpoint {endpoint} is not a multi-model endpoint and does not support TargetModel "
            f"(got {invocation.target_model!r}); remove the X-Amzn-SageMaker-Target-Model header."
        )


def reject_inference_component(invocation: Invocation) -> None:
    """The service's ValidationError when InferenceComponentName is sent to an endpoint without components.

    The wording is the service's, typo included, so code matching on it behaves the same.
    """
    if invocation.inference_component is not None:
        raise validation_error(
            "Inference Component Name header is not allowed for endpoints to which you dont plan to deploy "
            "inference components. Please remove the Inference Component Name header and try again."
        )


def reject_target_container(invocation: Invocation, endpoint: str) -> None:
    """ValidationError when TargetContainerHostname is set on an endpoint not in Direct mode."""
    if invocation.target_container is not None:
        raise validation_error(
            f"Endpoint {endpoint} does not use Direct inference mode and does not support "
            f"TargetContainerHostname (got {invocation.target_container!r}); remove that header."
        )


class SingleContainer:
    """One container behind the variant; the service calls it ``primary`` in error messages."""

    source = "primary"

    def __init__(self, process: ContainerProcess, *, endpoint: str) -> None:
        self.process = process
        self._endpoint = endpoint

    def validate(self, invocation: Invocation) -> None:
        reject_target_model(invocation, self._endpoint)
        reject_target_container(invocation, self._endpoint)

    def headers(self, invocation: Invocation) -> dict[str, str]:
        """What the container receives besides the body (a subclass adds its own, e.g. an adapter's)."""
        return invocation.container_headers(content_type=invocation.content_type, accept=invocation.accept)

    async def invoke(self, invocation: Invocation, scope: Scope) -> ContainerReply:
        return await call_container(
            self.process,
            "/invocations",
            invocation.body,
            self.headers(invocation),
            scope=scope,
            source=self.source,
            stream=invocation.stream,
        )


class SerialPipeline:
    """An inference pipeline: every container's response is the next container's request."""

    def __init__(self, processes: list[ContainerProcess], *, endpoint: str) -> None:
        self.processes = processes
        self._endpoint = endpoint

    def validate(self, invocation: Invocation) -> None:
        reject_target_model(invocation, self._endpoint)
        reject_target_container(invocation, self._endpoint)

    async def invoke(self, invocation: Invocation, scope: Scope) -> ContainerReply:
        body, content_type = invocation.body, invocation.content_type
        last = len(self.processes) - 1
        reply: ContainerReply | None = None
        for hop, process in enumerate(self.processes):
            # Intermediate hops get no Accept: their SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT decides.
            accept = invocation.accept if hop == last else None
            headers = invocation.container_headers(content_type=content_type, accept=accept)
            reply = await call_container(
                process,
                "/invocations",
                body,
                headers,
                scope=scope,
                source=process.spec.name,
                stream=invocation.stream and hop == last,  # the last container's answer is the stream
            )
            body, content_type = reply.body, reply.content_type
        assert reply is not None
        return reply


class DirectContainers:
    """Independent containers on one variant, chosen per request by TargetContainerHostname."""

    def __init__(self, processes: list[ContainerProcess], *, endpoint: str) -> None:
        self.by_hostname = {p.spec.hostname or p.spec.name: p for p in processes}
        self._endpoint = endpoint

    def validate(self, invocation: Invocation) -> None:
        reject_target_model(invocation, self._endpoint)
        known = ", ".join(sorted(self.by_hostname))
        if invocation.target_container is None:
            raise validation_error(
                f"Endpoint {self._endpoint} uses Direct inference mode: set TargetContainerHostname "
                f"(X-Amzn-SageMaker-Target-Container-Hostname) to one of: {known}."
            )
        if invocation.target_container not in self.by_hostname:
            raise validation_error(
                f"TargetContainerHostname {invocation.target_container!r} is not a container of endpoint "
                f"{self._endpoint}; use one of: {known}."
            )

    async def invoke(self, invocation: Invocation, scope: Scope) -> ContainerReply:
        self.validate(invocation)
        assert invocation.target_container is not None
        process = self.by_hostname[invocation.target_container]
        headers = invocation.container_headers(content_type=invocation.content_type, accept=invocation.accept)
        return await call_container(
            process,
            "/invocations",
            invocation.body,
            headers,
            scope=scope,
            source=invocation.target_container,
            stream=invocation.stream,
        )
