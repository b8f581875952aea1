"""An inference-component endpoint run locally: one serving-runtime process per component.

InvokeEndpoint names the component in ``InferenceComponentName`` (header
``X-Amzn-SageMaker-Inference-Component``) and reaches that component's container; the answers when it is
missing, unknown, or when the component has no copy are the service's
(https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_runtime_InvokeEndpoint.html).

A component whose autoscaling allows ``min_copies: 0`` stops its copy after
``LocalSettings.component_idle_seconds`` without traffic, as its scale-in to zero. The next request finds
no copy: it gets the service's "no capacity" ValidationError and, like the ``NoCapacityInvocationFailures``
alarm and step policy on AWS, starts a copy; requests answer again once it is up
(https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-zero-instances.html).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path

from smkit.config import InferenceComponentSpec
from smkit.config.resolved import ResolvedDeployment
from smkit.local.artifacts import ArtifactError
from smkit.local.containers import ContainerProcess, ContainerReply
from smkit.local.engines import AdapterRouter, EngineProcess
from smkit.local.error_shapes import validation_error
from smkit.local.metrics import Target
from smkit.local.routers import Scope, SingleContainer
from smkit.local.runtime import EndpointRuntime, LocalSettings
from smkit.local.runtime_api import Invocation
from smkit.local.sticky_sessions import check_session_id
from smkit.local.variants import ProductionVariant

log = logging.getLogger(__name__)

MISSING = (
    "Inference Component Name header is required for endpoints to which you plan to deploy inference "
    "components. Please include Inference Component Name header or consider using SageMaker models."
)
# The service's answer while a component has no copy (AWS ML blog, "Unlock cost savings with the new scale
# down to zero feature in SageMaker Inference").
NO_CAPACITY = (
    "Inference Component has no capacity to process this request. ApplicationAutoScaling may be in-progress "
    "(if configured) or try to increase the capacity by invoking UpdateInferenceComponentRuntimeConfig API."
)


class LocalComponent:
    """One component: its container process, copy state and, when it scales to zero, its idle reaper."""

    def __init__(
        self, spec: InferenceComponentSpec, process: ContainerProcess, *, endpoint: str, idle_seconds: float
    ) -> None:
        self.name = spec.name
        self.process = process
        self.router = SingleContainer(process, endpoint=endpoint)
        self.scales_to_zero = spec.autoscaling is not None and spec.autoscaling.min_copies == 0
        self.idle_seconds = idle_seconds
        self.invocations = 0
        self.scale_from_zero_starts = 0
        self.scale_ins = 0
        self.in_flight = 0
        self._last_used = time.monotonic()
        self._ready = False  # a copy answers /ping (the process runs and has started)
        self._starting: asyncio.Task[None] | None = None
        self._reaper: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    @property
    def warm(self) -> bool:
        """True while a started copy runs."""
        return self._ready and self.process.running

    @property
    def copies(self) -> int:
        """Copies running right now (a local component has one or none)."""
        return 1 if self.warm else 0

    async def start(self) -> None:
        """Start the copy the component is created with; start the reaper if it scales to zero."""
        await self.process.start()
        self._ready = True
        self._last_used = time.monotonic()
        if self.scales_to_zero:
            self._reaper = asyncio.create_task(self._reap())

    async def stop(self) -> None:
        """Stop the reaper, a copy being started, and the copy."""
        for task in (self._reaper, self._starting):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self._reaper = self._starting = None
        self._ready = False
        await self.process.stop()

    async def invoke(self, invocation: Invocation, scope: Scope) -> ContainerReply:
        """The copy's answer, or the service's no-capacity ValidationError (which starts a copy)."""
        if not self.warm:
            self._scale_from_zero()
            raise validation_error(NO_CAPACITY)
        self.router.validate(invocation)
        self.invocations += 1
        self.in_flight += 1
        try:
            return await self.router.invoke(invocation, scope)
        finally:
            self.in_flight -= 1
            self._last_used = time.monotonic()

    def _scale_from_zero(self) -> None:
        if self._starting is None or self._starting.done():
            self.scale_from_zero_starts += 1
            self._starting = asyncio.create_task(self._start_copy())

    async def _start_copy(self) -> None:
        async with self._lock:
            if self.warm:
                return
            try:
                await self.process.start()
            except Exception:
                log.exception("inference component %s: the scale-from-zero copy failed to start", self.name)
                return
            self._ready = True
            self._last_used = time.monotonic()

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(min(self.idle_seconds / 2, 1.0))
            idle = time.monotonic() - self._last_used
            if self.warm and self.in_flight == 0 and idle >= self.idle_seconds:
                async with self._lock:
                    if self.in_flight == 0:
                        self._ready = False
                        await self.process.stop()
                        self.scale_ins += 1


class LocalAdapter(LocalComponent):
    """An adapter component: its LoRA weights loaded into the base component's engine (smkit.local.engines).

    It has no process of its own; it is up while its adapter is registered and the base's copy runs.
    """

    def __init__(
        self, spec: InferenceComponentSpec, base: LocalComponent, weights: Path, *, endpoint: str
    ) -> None:
        if not isinstance(base.process, EngineProcess):
            raise ArtifactError(
                f"adapter component {spec.name}: its base component {base.name} does not run an LLM engine image "
                "that loads adapters (AWS's vLLM image); adapters need one"
            )
        super().__init__(spec, base.process, endpoint=endpoint, idle_seconds=base.idle_seconds)
        self.base = base
        self.engine: EngineProcess = base.process
        self.weights = weights
        self.router = AdapterRouter(base.process, endpoint=endpoint, adapter=spec.name)
        self.scales_to_zero = False  # its copies are the base's
        self._loaded_in: int | None = None  # the engine process the adapter was registered with

    @property
    def warm(self) -> bool:
        return self._ready and self.base.warm

    async def start(self) -> None:
        """Register the adapter with the base's engine (started first by the runtime)."""
        await self.engine.load_adapter(self.name, self.weights)
        self._loaded_in = self.engine.pid
        self._ready = True

    async def stop(self) -> None:
        self._ready = False

    async def invoke(self, invocation: Invocation, scope: Scope) -> ContainerReply:
        """The base engine's answer with the adapter applied; with the base scaled to zero, the service's
        no-capacity error (which starts the base); a restarted base gets the adapter again first."""
        if not self.base.warm:
            self.base._scale_from_zero()
            raise validation_error(NO_CAPACITY)
        if self._loaded_in != self.engine.pid:
            await self.start()
        try:
            return await super().invoke(invocation, scope)
        finally:
            self.base._last_used = time.monotonic()  # an adapter's traffic keeps its base's copy


class ComponentEndpointRuntime(EndpointRuntime):
    """An endpoint of ``endpoint.type: inference-components``: its components on one local variant."""

    def __init__(
        self,
        deployment: ResolvedDeployment,
        *,
        name: str | None = None,
        settings: LocalSettings | None = None,
    ):
        self.components: dict[str, LocalComponent] = {}
        self.adapters: dict[str, LocalAdapter] = {}
        super().__init__(deployment, name=name, settings=settings)

    def _build_variants(self) -> list[ProductionVariant]:
        spec = self.deployment.components
        assert spec is not None, "an inference-components endpoint resolves its components"
        variant = self.deployment.variants[0]
        for component in spec.components:
            if component.container is None:
                continue  # an adapter: after its base
            container = self.deployment.container(component.container)
            process = self._process(container, variant, component=component)
            self.components[component.name] = LocalComponent(
                component, process, endpoint=self.name, idle_seconds=self.settings.component_idle_seconds
            )
        for component in spec.components:
            if component.base_component is not None:
                weights = self._adapter_weights(component)
                adapter = LocalAdapter(
                    component, self.components[component.base_component], weights, endpoint=self.name
                )
                self.components[component.name] = self.adapters[component.name] = adapter
        self.variant_name = variant.name
        return []  # the components take the traffic, not a variant's own model

    def _adapter_weights(self, component: InferenceComponentSpec) -> Path:
        """The adapter's folder: its ``artifact_path`` as it is (no S3: deploy uploads its archive), or where its
        ``artifact_url`` (one .tar.gz: the config rules refuse anything else) is extracted by start()."""
        if component.artifact_path is not None:
            return Path(component.artifact_path)
        name, uri = component.name, component.artifact_url
        assert uri is not None, "an adapter component has artifact_url or artifact_path (config rules)"
        archive = self.workdir / "adapters" / f"{name}.tar.gz"
        self._downloads[archive] = uri
        target = self.workdir / "adapters" / name
        self._archives[target] = archive
        return target

    def _processes(self) -> list[ContainerProcess]:
        own = [c.process for n, c in self.components.items() if n not in self.adapters]
        return [*super()._processes(), *own]

    def metric_targets(self) -> list[Target]:
        variant = self.variants[0].name if self.variants else ""
        own = [
            Target(
                {"variant": variant, "inference_component": n, "container": c.process.label},
                c.process.port,
                c.process.spec.environment,
            )
            for n, c in self.components.items()
            if n not in self.adapters
        ]
        return [*super().metric_targets(), *own]

    def component(self, name: str) -> LocalComponent:
        """The component called ``name`` (KeyError when there is none)."""
        return self.components[name]

    async def _start(self) -> None:
        await super()._start()  # extracts the model archives
        bases = [c for n, c in self.components.items() if n not in self.adapters]
        for group in (bases, list(self.adapters.values())):  # an adapter loads into its running base
            results = await asyncio.gather(*(c.start() for c in group), return_exceptions=True)
            errors = [r for r in results if isinstance(r, BaseException)]
            if errors:
                raise errors[0]

    async def stop(self) -> None:
        """Stop every component's copy, then remove the extracted model data."""
        await asyncio.gather(*(c.stop() for c in self.components.values()), return_exceptions=True)
        await super().stop()

    def openai_targets(self) -> list[str | None]:
        """Every component: the OpenAI-compatible route of an endpoint with components is per component (the
        endpoint's own is refused as InvokeEndpoint without InferenceComponentName is), and a component's one
        container takes a call with no header."""
        return list(self.components)

    async def invoke(self, invocation: Invocation) -> tuple[str, ContainerReply]:
        """InvokeEndpoint with InferenceComponentName: the variant's name and the component's answer."""
        # The API's own check of SessionId, as on every other endpoint kind (smkit.local.variants): a malformed
        # id, or NEW_SESSION on a response stream, never reaches the component's container.
        check_session_id(invocation.session_id, stream=invocation.stream)
        name = invocation.inference_component
        if name is None:
            raise validation_error(MISSING)
        component = self.components.get(name)
        if component is None:
            known = ", ".join(sorted(self.components))
            raise validation_error(
                f"Inference component {name} of endpoint {self.name} not found; InferenceComponentName must be "
                f"one of: {known}."
            )
        scope = Scope(endpoint=self.name, variant=self.variant_name, region=self.settings.region)
        return self.variant_name, await component.invoke(invocation, scope)


def create_runtime(
    deployment: ResolvedDeployment, *, name: str | None = None, settings: LocalSettings | None = None
) -> EndpointRuntime:
    """The local runtime of ``deployment``: components for an inference-components endpoint, else variants."""
    if deployment.endpoint_type == "inference-components":
        return ComponentEndpointRuntime(deployment, name=name, settings=settings)
    return EndpointRuntime(deployment, name=name, settings=settings)
