"""Client side: invoke an endpoint (real or local) with the SageMaker SDK's serializers, and smoke-test it."""

from smkit.client.invoke import (
    AsyncOutcome,
    AsyncSubmission,
    InvokeError,
    InvokeResult,
    Target,
    invoke,
    invoke_async,
    runtime_client,
    wait_for_outcome,
)

__all__ = [
    "AsyncOutcome",
    "AsyncSubmission",
    "InvokeError",
    "InvokeResult",
    "Target",
    "invoke",
    "invoke_async",
    "runtime_client",
    "wait_for_outcome",
]
