"""Adapter inference components locally: a LoRA adapter served by its base component's engine.

On AWS an adapter component (``Specification.BaseInferenceComponentName`` with ``Container.ArtifactUrl``)
has no container of its own: SageMaker registers the adapter's weights with the base component's engine
and sends each request for the adapter to that engine with the adapter selected
(https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-adapt.html). The engine side of that
contract is AWS's model-hosting-container-standards package, which vLLM's server uses
(docs/sagemaker/05_lora_adapter_management.md there): ``POST /adapters`` with ``{"name", "src"}`` loads
the weights, and the ``X-Amzn-SageMaker-Adapter-Identifier`` header on ``/invocations`` selects them.
Locally the adapter is registered under its component's name with the folder its ``artifact_url`` was
downloaded (and, for an archive, extracted) into.
"""

from __future__ import annotations

from smkit.llm.engine import adapter_headers
from smkit.local.containers import ContainerProcess, ContainerReply
from smkit.local.protocol import Invocation
from smkit.local.routers import Scope, SingleContainer, call_container


class AdapterRouter(SingleContainer):
    """The base component's container, with the adapter selected on every request."""

    def __init__(self, process: ContainerProcess, *, endpoint: str, adapter: str) -> None:
        super().__init__(process, endpoint=endpoint)
        self.adapter = adapter

    async def invoke(self, invocation: Invocation, scope: Scope) -> ContainerReply:
        headers = invocation.container_headers(content_type=invocation.content_type, accept=invocation.accept)
        headers.update(adapter_headers(self.adapter))
        return await call_container(
            self.process,
            "/invocations",
            invocation.body,
            headers,
            scope=scope,
            source=self.source,
            stream=invocation.stream,
        )
