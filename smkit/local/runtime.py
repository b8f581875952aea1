"""One endpoint as the local SageMaker runs it: variants, their containers and (for async) the queue.

Built from the :class:`~smkit.config.resolved.ResolvedDeployment` that ``cdk deploy`` translates too: what the
config means on SageMaker is decided there once and only read here. Per endpoint type:

=============== ==============================================================================
realtime        every ``endpoint.variants`` entry, weighted, one process per container
serverless      one variant (``serverless.variant_name``), 4 MB payloads, MaxConcurrency, cold starts
multi-model     one multi-model container per variant, TargetModel from the local prefix
multi-container serial pipeline or direct (``model.inference_mode``), one process per container
async           instance variants behind InvokeEndpointAsync only
=============== ==============================================================================
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from smkit.config import InferenceComponentSpec
from smkit.config.resolved import (
    ResolvedContainer,
    ResolvedDeployment,
    ResolvedVariant,
    WorkerCount,
)
from smkit.contract import DEFAULT_STARTUP_HEALTH_CHECK_S, REGION, STARTUP_HEALTH_CHECK_RANGE_S, STOP_GRACE_S
from smkit.cpus import available_cpus
from smkit.local.artifacts import ArtifactError, extract_archive
from smkit.local.asyncinvoke import AsyncInvocations, AsyncRequest
from smkit.local.capture import DataCaptureWriter
from smkit.local.channels import ChannelFolders
from smkit.local.cloudwatch import InvocationMetrics
from smkit.local.containers import ContainerLaunch, ContainerProcess, ContainerReply
from smkit.local.engines import EngineProcess, engine_process
from smkit.local.environments import environment_for
from smkit.local.error_shapes import RuntimeApiError, validation_error
from smkit.local.metrics import Target
from smkit.local.routers import (
    DirectContainers,
    Router,
    Scope,
    SerialPipeline,
    SingleContainer,
    reject_inference_component,
)
from smkit.local.runtime_api import Headers, Invocation
from smkit.local.shadow import Shadow, ShadowTraffic
from smkit.local.sticky_sessions import sticky_instances
from smkit.local.target_model import MultiModel
from smkit.local.variants import (
    ProductionVariant,
    ServerlessProductionVariant,
    choose_variant,
    session_variant,
)
from smkit.modelenv import envs_enabled
from smkit.object_store import Storage, StorageError, file_uri, join

DEFAULT_IDLE_SECONDS = 300.0  # serverless: containers stop after this long without traffic
DEFAULT_ASYNC_CONCURRENCY = 4  # MaxConcurrentInvocationsPerInstance when the config leaves it unset
DEFAULT_COMPONENT_IDLE_SECONDS = 300.0  # a component that scales to zero releases its copy after this


@dataclass(frozen=True)
class LocalSettings:
    """Local-only knobs; none of them changes what the config means.

    Attributes:
        root: directory that the relative paths of a config built from data are relative to (a loaded
            config's paths are absolute) and that default output locations are under.
        log_dir: write each container's output to ``<log_dir>/<variant>-<container>.log`` (None: inherit).
        workers: model workers per serving process, overriding the resolved count (None: the config's
            ``SAGEMAKER_MODEL_SERVER_WORKERS``, else the instance type's vCPUs capped by the local CPUs;
            docs/resolved-deployment.md).
        serverless_idle_seconds: a serverless variant without provisioned concurrency goes cold after this.
        async_output: base ``s3://`` or ``file://`` location for async output/failure prefixes
            (default: ``file://<root>/build/local/<endpoint>``).
        notification_log: JSON Lines file for async notifications (default: beside file:// output, when the
            config enables notifications).
        s3_endpoint_url: where ``s3://`` locations live (moto's server); None: boto3's environment.
        region: the region reported in ARNs and notifications.
        data_capture_dir: where sampled requests/responses go when the config enables data capture
            (default: ``<root>/build/local/<endpoint>``).
        seed: seed of the weighted variant choice and the capture sampling (reproducible runs).
        startup_timeout_s: how long a container may take to answer ``GET /ping`` 200 (None: the variant's
            ``container_startup_health_check_timeout_seconds``, as on SageMaker, else
            :data:`~smkit.contract.DEFAULT_STARTUP_HEALTH_CHECK_S`).
        component_idle_seconds: an inference component whose autoscaling has ``min_copies: 0`` stops its
            copy after this long without traffic (its scale-in to zero).
        model_envs: run each container in its model's environment (:mod:`smkit.modelenv`: the image's
            Python and packages plus ``code/requirements.txt``, offline from ``code/wheels`` when the
            archive vendors wheels); False runs them with this interpreter.
        python: run every container with this interpreter instead (``--python``).
        verify_signatures: check the SigV4 signature of every runtime call as the service does
            (``--verify-signatures``; :mod:`smkit.local.auth`); the config's ``local.verify_signatures``
            turns it on too. Off in both: any or no signature is accepted.
        credentials: more ``(access key, secret key)`` pairs the endpoint accepts, beyond those of
            :func:`smkit.local.auth.local_credentials` (the pair ``local``/``local`` and the environment's).
        cloudwatch_endpoint_url: publish SageMaker's invocation metrics (``AWS/SageMaker``) to the CloudWatch
            at this URL, the emulator's (:mod:`smkit.local.cloudwatch`); None: publish nothing.
    """

    root: Path = field(default_factory=Path.cwd)
    log_dir: Path | None = None
    workers: int | None = None
    serverless_idle_seconds: float = DEFAULT_IDLE_SECONDS
    async_output: str | None = None
    notification_log: Path | None = None
    s3_endpoint_url: str | None = None
    region: str = "us-east-1"
    data_capture_dir: Path | None = None
    seed: int | None = None
    startup_timeout_s: float | None = None
    component_idle_seconds: float = DEFAULT_COMPONENT_IDLE_SECONDS
    model_envs: bool = field(default_factory=envs_enabled)
    python: str | None = None
    verify_signatures: bool = False
    credentials: tuple[tuple[str, str], ...] = ()
    cloudwatch_endpoint_url: str | None = None


def startup_limit(
    variant: ResolvedVariant, override: float | None, component: InferenceComponentSpec | None = None
) -> tuple[float, str]:
    """How long ``variant``'s containers (or ``component``'s copy) may take to pass ``/ping``, and how to
    change it (for the error): the ``ContainerStartupHealthCheckTimeoutInSeconds`` SageMaker applies, of the
    component's StartupParameters, else of the variant
    (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariant.html)."""
    setting = "container_startup_health_check_timeout_seconds"
    low, high = STARTUP_HEALTH_CHECK_RANGE_S
    if override is not None:
        return override, "the local endpoint's startup_timeout_s sets this limit"
    if component is not None and component.container_startup_health_check_timeout_seconds is not None:
        return float(component.container_startup_health_check_timeout_seconds), (
            f"the limit is inference component {component.name!r}'s {setting}, as on SageMaker; raise it (up "
            f"to {high}) in the config"
        )
    if variant.startup_health_check_timeout_s is not None:
        return float(variant.startup_health_check_timeout_s), (
            f"the limit is variant {variant.name!r}'s {setting}, as on SageMaker; raise it (up to {high}) in "
            "the config"
        )
    owner = (
        f"inference component {component.name!r}" if component is not None else f"variant {variant.name!r}"
    )
    return DEFAULT_STARTUP_HEALTH_CHECK_S, (
        f"{owner} sets no {setting}, so the local default of "
        f"{DEFAULT_STARTUP_HEALTH_CHECK_S:.0f} s applies; set it ({low} to {high}) in the config to wait longer"
    )


class EndpointRuntime:
    """Everything behind one endpoint name; start/stop run on the gateway's event loop."""

    def __init__(
        self,
        deployment: ResolvedDeployment,
        *,
        name: str | None = None,
        settings: LocalSettings | None = None,
    ):
        # What the config means on SageMaker, decided once (smkit.config.resolved): read, never re-derived.
        self.deployment = deployment
        # Request body limit of InvokeEndpoint on this endpoint (docs/serverless-async.md).
        self.payload_limit: int = deployment.payload_limit
        self.name = name or deployment.name
        self.settings = settings or LocalSettings()
        self.kind = deployment.endpoint_type
        # Extracted model data; created by start(), removed by stop().
        self.workdir = Path(tempfile.gettempdir()) / f"smkit-local-{self.name}-{uuid.uuid4().hex[:8]}"
        self._archives: dict[Path, Path] = {}  # extracted dir -> source archive
        self._downloads: dict[Path, str] = {}  # local copy -> model data already in S3 (source: s3)
        # Each container's additional model data sources (smkit.local.channels), made ready by start().
        self.channels = ChannelFolders(self.workdir, fetch=self._downloads, extract=self._archives)
        self._rng = random.Random(self.settings.seed)
        self._scopes: dict[str, Scope] = {}  # by variant name
        self.variants: list[ProductionVariant] = self._build_variants()
        self.asynchronous: AsyncInvocations | None = self._build_async() if self.kind == "async" else None
        self.capture: DataCaptureWriter | None = self._build_capture()
        self.shadows: ShadowTraffic | None = self._build_shadows()
        self.cloudwatch: InvocationMetrics | None = (
            InvocationMetrics(self.name, self.settings.cloudwatch_endpoint_url, self.settings.region)
            if self.settings.cloudwatch_endpoint_url
            else None
        )
        if self.cloudwatch is not None:
            for v in self.variants:
                if isinstance(v, ServerlessProductionVariant):
                    v.on_setup = self.cloudwatch.record_setup

    # --- construction -------------------------------------------------------------------------------

    @property
    def archives(self) -> dict[str, Path]:
        """Extracted model directory -> the model.tar.gz it came from."""
        return {str(target): source for target, source in self._archives.items()}

    def _local_source(self, container: ResolvedContainer) -> Path:
        """Where a container's model data is on this machine; data in S3 is downloaded there by start()."""
        data = container.model_data
        if data.uri is None:
            assert data.path is not None
            return data.path
        local = self.workdir / "s3" / container.name / data.file_name
        self._downloads[local] = data.uri
        return local

    def _model_dir(self, container: ResolvedContainer) -> Path:
        source = self._local_source(container)
        if container.model_data.kind != "archive":
            return source
        target = self.workdir / "models" / container.name
        self._archives[target] = source
        return target

    def _process(
        self,
        container: ResolvedContainer,
        variant: ResolvedVariant,
        instance: int = 0,
        *,
        component: InferenceComponentSpec | None = None,
    ) -> ContainerProcess:
        """The process of ``container`` on ``variant`` (as ``component``'s copy, for an inference component):
        the resolved environment plus what only a local run needs (:data:`smkit.local.containers.LOCAL_ONLY`),
        the worker count the resolved rule gives and the start-up limit SageMaker applies."""
        workers = container.workers(variant, available_cpus().count)
        if self.settings.workers is not None:
            workers = WorkerCount(self.settings.workers, "--workers (a local override)")
        spec = ContainerLaunch(
            name=container.name,
            hostname=container.hostname,
            model_dir=self._model_dir(container),
            multi_model=container.multi_model,
            environment={**container.environment, REGION: self.settings.region},
            channels_dir=self.channels.root(container.name, container.channels),
        )
        timeout_s, limit = startup_limit(variant, self.settings.startup_timeout_s, component)
        options: dict[str, object] = {
            "label": f"{variant.name}-{container.name}" + (f"-{instance + 1}" if instance else ""),
            "log_dir": self.settings.log_dir,
            "startup_timeout_s": timeout_s,
            "startup_limit": limit,
            "stop_grace_s": STOP_GRACE_S,
        }
        engine = engine_process(container, spec, **options)  # an LLM engine image (smkit.llm.engine)
        if engine is not None:
            return engine
        return ContainerProcess(spec, workers=workers.count, workers_reason=workers.reason, **options)  # type: ignore[arg-type]

    def _router(self, containers: list[ResolvedContainer], processes: list[ContainerProcess]) -> Router:
        if containers[0].multi_model:
            (process,) = processes
            return MultiModel(
                process,
                prefix=self._local_source(containers[0]),
                endpoint=self.name,
                cache_enabled=containers[0].model_data.cache_enabled,
            )
        if len(processes) == 1:
            return SingleContainer(processes[0], endpoint=self.name)
        if self.deployment.inference_mode == "direct":
            return DirectContainers(processes, endpoint=self.name)
        return SerialPipeline(processes, endpoint=self.name)

    def _build_variants(self) -> list[ProductionVariant]:
        containers = list(self.deployment.production_containers)
        serverless = self.deployment.serverless
        variants: list[ProductionVariant] = []
        for spec in self.deployment.variants:
            processes = [self._process(c, spec) for c in containers]
            router = self._router(containers, processes)
            if self.kind == "serverless" and serverless is not None:
                variants.append(
                    ServerlessProductionVariant(
                        spec.name,
                        router=router,
                        processes=processes,
                        max_concurrency=serverless.max_concurrency,
                        provisioned_concurrency=serverless.provisioned_concurrency,
                        idle_seconds=self.settings.serverless_idle_seconds,
                        payload_limit=self.deployment.payload_limit,
                    )
                )
            else:
                # A variant of stateful-session containers runs every instance, so a session's requests
                # are seen to stick to one (smkit/local/sticky_sessions.py); others run one.
                instances = [router]
                for index in range(1, sticky_instances(containers, spec)):
                    extra = [self._process(c, spec, index) for c in containers]
                    instances.append(self._router(containers, extra))
                    processes += extra
                variants.append(
                    ProductionVariant(
                        spec.name,
                        weight=spec.initial_weight,
                        router=router,
                        processes=processes,
                        payload_limit=self.deployment.payload_limit,
                        instances=instances,
                    )
                )
        return variants

    def _build_async(self) -> AsyncInvocations:
        spec = self.deployment.asynchronous
        assert spec is not None, "an async endpoint resolves its endpoint.async section"
        base = self.settings.async_output or file_uri(self.settings.root / "build" / "local" / self.name)
        log = self.settings.notification_log
        if log is None and spec.notifications and base.startswith("file://"):
            log = Path(base.removeprefix("file://")) / "notifications.jsonl"
        per_instance = spec.max_concurrent_invocations_per_instance or DEFAULT_ASYNC_CONCURRENCY
        instances = sum(v.initial_instance_count for v in self.deployment.variants)
        return AsyncInvocations(
            endpoint=self.name,
            region=self.settings.region,
            output_path=join(base, spec.output_prefix),
            failure_path=join(base, spec.failure_prefix),
            storage=Storage(self.settings.s3_endpoint_url, self.settings.region),
            concurrency=per_instance * max(instances, 1),
            run=self._route,
            notification_log=log if spec.notifications else None,
        )

    def _build_shadows(self) -> ShadowTraffic | None:
        if not self.deployment.shadow_variants:
            return None
        shadows = []
        for spec in self.deployment.shadow_variants:
            (container,) = (self.deployment.container(name) for name in spec.containers)
            process = self._process(container, spec)
            variant = ProductionVariant(
                spec.name,
                weight=spec.sampling_percentage / 100,
                router=SingleContainer(process, endpoint=self.name),
                processes=[process],
                payload_limit=self.deployment.payload_limit,
            )
            shadows.append(Shadow(variant, spec.sampling_percentage))
        return ShadowTraffic(
            shadows,
            capture=self.capture,
            endpoint=self.name,
            region=self.settings.region,
            rng=random.Random(self.settings.seed),
        )

    def _all_variants(self) -> list[ProductionVariant]:
        return [*self.variants, *(self.shadows.variants if self.shadows else [])]

    def _build_capture(self) -> DataCaptureWriter | None:
        spec = self.deployment.data_capture  # None unless capture is enabled
        if spec is None:
            return None
        base = self.settings.data_capture_dir or self.settings.root / "build" / "local" / self.name
        return DataCaptureWriter(spec, base=base, endpoint=self.name, rng=random.Random(self.settings.seed))

    # --- lifecycle ----------------------------------------------------------------------------------

    async def start(self) -> None:
        """Extract model data and start every variant's containers (in parallel)."""
        try:
            await self._start()
            if self.cloudwatch is not None:
                self.cloudwatch.start()
        except BaseException:  # failed or cancelled (Ctrl-C during start): leave nothing running
            await self.stop()
            raise

    async def _start(self) -> None:
        storage = Storage(self.settings.s3_endpoint_url, self.settings.region)
        for local, uri in self._downloads.items():
            if not local.exists():
                try:
                    await asyncio.to_thread(storage.download, uri, local)
                except StorageError as exc:
                    raise ArtifactError(f"endpoint {self.name}: model data {exc}") from exc
        for target, archive in self._archives.items():
            try:
                await asyncio.to_thread(extract_archive, archive, target)
            except ArtifactError as exc:
                raise ArtifactError(f"endpoint {self.name}: {exc}") from exc
        try:
            self.channels.link()
        except ArtifactError as exc:
            raise ArtifactError(f"endpoint {self.name}: {exc}") from exc
        if self.settings.model_envs or self.settings.python:
            await asyncio.to_thread(self._prepare_environments)
        for variant in self.variants:
            if isinstance(variant.router, MultiModel) and not variant.router.prefix.is_dir():
                raise ArtifactError(
                    f"endpoint {self.name}: multi-model prefix {variant.router.prefix} is not a directory; "
                    "build it first (make package-model)"
                )
        results = await asyncio.gather(*(v.start() for v in self._all_variants()), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise errors[0]

    def metric_targets(self) -> list[Target]:
        """Every container SageMaker would scrape, with the labels of where it runs (smkit/local/metrics.py)."""
        return [
            Target({"variant": variant.name, "container": p.label}, p.port, p.spec.environment)
            for variant in self._all_variants()
            for p in variant.processes
        ]

    def _processes(self) -> list[ContainerProcess]:
        """Every container process the endpoint starts: production and shadow variants'."""
        return [process for variant in self._all_variants() for process in variant.processes]

    def _prepare_environments(self) -> None:
        """Build (or reuse) every container's model environment, one after the other (pip is heavy)."""
        for process in self._processes():
            if isinstance(process, EngineProcess):
                process.prepare(python=self.settings.python)
                continue
            container = self.deployment.container(process.spec.name)
            multi_model = process.spec.multi_model
            env = environment_for(
                None if multi_model else process.spec.model_dir,
                container.image.runtime,
                python=self.settings.python,
                isolated=container.network_isolation,
                label=f"container {process.label}",
                multi_model_prefix=process.spec.model_dir if multi_model else None,
            )
            process.use_environment(env.python, env.environ())

    async def stop(self) -> None:
        """Cancel queued async work, stop every container, remove extracted model data; send the last
        CloudWatch metrics."""
        if self.cloudwatch is not None:
            await asyncio.to_thread(self.cloudwatch.stop)
        if self.asynchronous is not None:
            await self.asynchronous.stop()
        if self.shadows is not None:
            await self.shadows.stop()
        await asyncio.gather(*(v.stop() for v in self._all_variants()), return_exceptions=True)
        shutil.rmtree(self.workdir, ignore_errors=True)

    # --- invocations --------------------------------------------------------------------------------

    def variant(self, name: str) -> ProductionVariant:
        """The variant called ``name`` (KeyError when there is none)."""
        for variant in self.variants:
            if variant.name == name:
                return variant
        raise KeyError(name)

    def _refuse(self, invocation: Invocation) -> None:
        """The ValidationError of a call this endpoint takes from no client: every call but InvokeEndpointAsync
        on an asynchronous endpoint, InferenceComponentName on an endpoint without components."""
        if self.asynchronous is not None:
            raise validation_error(
                f"Endpoint {self.name} is an asynchronous endpoint (AsyncInferenceConfig) and accepts only "
                "InvokeEndpointAsync; call invoke_endpoint_async with an InputLocation."
            )
        reject_inference_component(invocation)

    def openai_targets(self) -> list[str | None]:
        """Where the OpenAI-compatible route answers (smkit/local/openai_route.py): ``[None]`` (the endpoint
        itself) when this endpoint and its variants' model shape take a streamed call with no header (the
        route sends none: no TargetModel, no TargetContainerHostname), else none."""
        call = Invocation(b"", stream=True)
        try:
            self._refuse(call)
            for variant in self.variants:
                variant.router.validate(call)
        except RuntimeApiError:
            return []
        return [None]

    async def _route(self, invocation: Invocation) -> tuple[str, ContainerReply]:
        """The variant that takes ``invocation`` (its session's, TargetVariant, else by weight) and its
        reply; ValidationError for headers this endpoint refuses."""
        started = time.perf_counter()
        variant = session_variant(self.variants, invocation.session_id) or choose_variant(
            self.variants, invocation.target_variant, self._rng, endpoint=self.name
        )
        variant.router.validate(invocation)
        scope = self._scopes.get(variant.name)
        if scope is None:
            scope = self._scopes[variant.name] = Scope(self.name, variant.name, self.settings.region)
        if self.cloudwatch is None:
            return variant.name, await variant.invoke(invocation, scope)
        return variant.name, await self._measured(variant, invocation, scope, started)

    async def _measured(
        self, variant: ProductionVariant, invocation: Invocation, scope: Scope, started: float
    ) -> ContainerReply:
        """``variant.invoke`` recorded for CloudWatch: the status SageMaker counts (a ModelError's is the
        container's own), ModelLatency (the container's time) and OverheadLatency (the rest)."""
        assert self.cloudwatch is not None
        status, model_us = 500, None
        called = time.perf_counter()
        try:
            reply = await variant.invoke(invocation, scope)
            status = 200
            model_us = (time.perf_counter() - called) * 1e6
            return reply
        except RuntimeApiError as err:
            original = err.fields.get("OriginalStatusCode")
            if err.code == "ModelError":
                model_us = (time.perf_counter() - called) * 1e6
            status = original if err.code == "ModelError" and isinstance(original, int) else err.status
            raise
        finally:
            total_us = (time.perf_counter() - started) * 1e6
            self.cloudwatch.record(
                variant.name,
                status=status,
                model_us=model_us,
                overhead_us=max(0.0, total_us - (model_us or 0.0)),
            )

    async def invoke(self, invocation: Invocation) -> tuple[str, ContainerReply]:
        """InvokeEndpoint (or, with ``invocation.stream``, InvokeEndpointWithResponseStream): the invoked
        variant's name and the reply (RuntimeApiError otherwise)."""
        self._refuse(invocation)
        variant, reply = await self._route(invocation)
        if self.capture is not None and reply.stream is None:  # a stream is not captured (docs/streaming.md)
            await asyncio.to_thread(
                self.capture.record,
                variant=variant,
                request=invocation.body,
                request_type=invocation.content_type,
                response=reply.body,
                response_type=reply.content_type,
                inference_id=invocation.inference_id,
            )
        if self.shadows is not None:
            self.shadows.mirror(dataclasses.replace(invocation, stream=False))
        return variant, reply

    def submit(self, headers: Headers, body: bytes) -> AsyncRequest:
        """InvokeEndpointAsync: validate and queue (ValidationError when this endpoint is not async)."""
        if self.asynchronous is None:
            raise validation_error(
                f"Endpoint {self.name} is not an asynchronous endpoint; InvokeEndpointAsync needs an endpoint "
                "with AsyncInferenceConfig (config endpoint.type: async). Use invoke_endpoint."
            )
        return self.asynchronous.submit(headers, body)
