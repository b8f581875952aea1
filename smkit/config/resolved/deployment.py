"""The resolved deployment: what a config means on SageMaker, decided once and read by every consumer.

Built by :func:`smkit.config.resolved.resolve` (which :func:`smkit.config.load_config` calls once per
config). The stacks translate it into CloudFormation, the local endpoint into processes on 127.0.0.1;
neither decides any of it again. Every path is absolute.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from smkit.config.components import (
    ComputeRequirements,
    InferenceComponentSpec,
    InstanceScaling,
    RollingUpdate,
)
from smkit.config.endpoint import (
    AsyncSpec,
    DataCapture,
    Deployment,
    EndpointMetrics,
    InstancePool,
    ServerlessSpec,
)
from smkit.config.local_options import LocalOptions
from smkit.config.monitoring import Monitoring
from smkit.config.pipeline import PipelineSpec
from smkit.config.resolved.environment import WorkerCount, worker_count
from smkit.config.resolved.images import ResolvedImage
from smkit.config.security import Artifacts, Kms, Repository, Vpc
from smkit.config.storage import StorageSpec
from smkit.contract import CHANNELS_DIR, uses_huggingface_defaults

DataKind = Literal["archive", "prefix", "multi-model", "model-package"]
EndpointType = Literal[
    "realtime", "serverless", "multi-model", "multi-container", "async", "inference-components"
]
ScalingKind = Literal["provisioned-concurrency", "backlog", "invocations"]


@dataclass(frozen=True)
class ResolvedModelData:
    """A container's model data as SageMaker reads it.

    Attributes:
        kind: ``archive`` (one ``model.tar.gz``, ``ModelDataUrl``), ``prefix`` (uncompressed,
            ``S3DataType: S3Prefix``, ``CompressionType: None``) or ``multi-model`` (the prefix of a
            multi-model endpoint's ``*.tar.gz`` models, container ``Mode: MultiModel``) or ``model-package``
            (a model registry version, ``ModelPackageName``: its image and data are the package's).
        path: the absolute local file or directory (None: the data is already in S3).
        uri: the S3 URI of data already in S3 (None: local data the stacks upload); for a model package, the
            prefix its model data is under.
        package: the model package version (``model-package`` only): an ARN, or ``GROUP/VERSION`` in the
            deployment's account and region.
        kms_key_arn: the key encrypting data already in S3, if any.
        cache_enabled: ``MultiModelConfig.ModelCacheSetting`` (multi-model only).
        accept_eula: ``ModelAccessConfig.AcceptEula`` of an uncompressed prefix in S3 (gated weights).
        members: ``multi-model`` only: the models the set lists (``model_data.models``), each a
            ``model_code/NAME`` folder packaged into the set's folder as ``NAME.tar.gz``.
    """

    kind: DataKind
    path: Path | None = None
    uri: str | None = None
    kms_key_arn: str | None = None
    cache_enabled: bool = True
    accept_eula: bool = False
    package: str | None = None
    members: tuple[str, ...] = ()

    @property
    def compression(self) -> Literal["Gzip", "None"]:
        """``Gzip`` for an archive, ``None`` for an uncompressed prefix or a multi-model prefix."""
        return "Gzip" if self.kind == "archive" else "None"

    @property
    def in_s3(self) -> bool:
        """The data is already in S3 (``source: s3``)."""
        return self.uri is not None

    @property
    def location(self) -> str:
        """The local path or the S3 URI, for messages."""
        return self.uri if self.uri is not None else str(self.path)

    @property
    def file_name(self) -> str:
        """The archive's file name (``model.tar.gz``); empty for a prefix."""
        if self.kind != "archive":
            return ""
        return self.uri.rsplit("/", 1)[1] if self.uri is not None else Path(str(self.path)).name


@dataclass(frozen=True)
class ResolvedChannel:
    """One additional model data source of a container (``AdditionalModelDataSources[]``): SageMaker puts
    it at :attr:`container_path` before the container starts.

    Attributes:
        name: ``ChannelName``.
        data: where it comes from: kind ``archive`` (``S3Object``, ``Gzip``: extracted into the folder) or
            ``prefix`` (``S3Prefix``, ``None``); ``path`` the local folder or ``.tar.gz`` (None: in S3),
            ``uri`` the S3 URI of data already there.
        archive: a local folder delivered as an archive: the ``.tar.gz`` that ``smkit package`` writes from
            it and the stacks upload (None otherwise); the local endpoint reads the folder itself.
            https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_AdditionalModelDataSource.html
    """

    name: str
    data: ResolvedModelData
    archive: Path | None = None

    @property
    def container_path(self) -> str:
        """The folder the container reads: ``/opt/ml/additional-model-data-sources/<name>``."""
        return f"{CHANNELS_DIR}/{self.name}"

    @property
    def s3_data_type(self) -> Literal["S3Object", "S3Prefix"]:
        """``S3Object`` for an archive (with ``CompressionType: Gzip``), ``S3Prefix`` for a prefix."""
        return "S3Object" if self.data.kind == "archive" else "S3Prefix"

    @property
    def upload(self) -> Path | None:
        """The local file or folder the stacks upload (None: the data is already in S3)."""
        return self.archive if self.archive is not None else self.data.path


@dataclass(frozen=True)
class ResolvedContainer:
    """One ContainerDefinition.

    Attributes:
        name / hostname: the config's container name and ``ContainerHostname`` (direct mode).
        image: the image it runs.
        model_data: its model data.
        environment: the full ``Environment`` SageMaker passes (:mod:`smkit.config.resolved.environment`).
        profile: the serving runtime's profile, as ``SMKIT_PROFILE`` says.
        network_isolation: ``EnableNetworkIsolation`` of its Model.
        channels: its additional model data sources, in config order (empty: none).
        vendor_wheels: the packager vendors ``code/requirements.txt``'s wheels into the archive (network
            isolation on the kit's image; an AWS framework image installs the file itself at start). The
            packager skips it when the image already provides every line (smkit.modelenv.provided).
    """

    name: str
    hostname: str | None
    image: ResolvedImage
    model_data: ResolvedModelData
    environment: Mapping[str, str]
    profile: str
    network_isolation: bool
    vendor_wheels: bool
    channels: tuple[ResolvedChannel, ...] = ()

    @property
    def defaults(self) -> str | None:
        """The default handlers the container applies for hooks ``inference.py`` leaves out: its image's
        framework's, or ``huggingface`` on the kit's image when the environment sets ``HF_TASK`` or
        ``HF_MODEL_ID`` (the serving runtime reads the same variables, docs/hugging-face.md)."""
        if self.image.runtime.framework is None and uses_huggingface_defaults(self.environment):
            return "huggingface"
        return self.image.runtime.framework

    @property
    def multi_model(self) -> bool:
        """Container ``Mode: MultiModel``."""
        return self.model_data.kind == "multi-model"

    def workers(self, variant: ResolvedVariant, local_cpus: int) -> WorkerCount:
        """How many model workers a local run of this container on ``variant`` starts (and why)."""
        return worker_count(
            self.environment,
            instance_type=variant.instance_type,
            vcpus=variant.vcpus,
            local_cpus=local_cpus,
        )


@dataclass(frozen=True)
class ResolvedVariant:
    """A production or shadow variant.

    Attributes:
        name: ``VariantName``.
        containers: names of the containers its model runs, in order.
        instance_type / vcpus: the instance type and its vCPUs (None: serverless, or not in the table).
        initial_instance_count / initial_weight: as configured (a shadow's weight is its sampled share of
            the production variant's).
        shadow: a ShadowProductionVariant.
        sampling_percentage: a shadow variant's share of requests copied to it.
        startup_health_check_timeout_s: ``ContainerStartupHealthCheckTimeoutInSeconds`` (None: not set),
            how long its containers may take to pass ``/ping`` when they start
            (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariant.html).
        volume_size_gb / model_data_download_timeout_s / routing / inference_ami_version /
            capacity_reservation_arn / instance_pools / instance_provision_timeout_s: the
            ProductionVariant's settings as configured (None / empty: not set).
        pool_types: every instance type the variant may run on: its pools' by priority, else its one
            instance type (empty: serverless).
        core_dump_prefix: the data bucket's prefix of the variant's CoreDumpConfig (None: no core dumps).
        ssm_access: EnableSSMAccess.
    """

    name: str
    containers: tuple[str, ...]
    instance_type: str | None = None
    vcpus: int | None = None
    initial_instance_count: int = 1
    initial_weight: float = 1.0
    shadow: bool = False
    sampling_percentage: int = 100
    startup_health_check_timeout_s: int | None = None
    volume_size_gb: int | None = None
    model_data_download_timeout_s: int | None = None
    routing: Literal["least-outstanding-requests", "random"] | None = None
    inference_ami_version: str | None = None
    capacity_reservation_arn: str | None = None
    instance_pools: tuple[InstancePool, ...] = ()
    instance_provision_timeout_s: int | None = None
    pool_types: tuple[str, ...] = ()
    core_dump_prefix: str | None = None
    ssm_access: bool = False


@dataclass(frozen=True)
class ResolvedScaling:
    """The target-tracking policy of one variant (Application Auto Scaling).

    Attributes:
        variant: the variant's name (a production, shadow or serverless variant).
        instance_type: its instance type (None: serverless).
        kind: the metric tracked: ``provisioned-concurrency`` (a serverless variant's
            ``ServerlessProvisionedConcurrencyUtilization``), ``backlog`` (an async endpoint's
            ``ApproximateBacklogSizePerInstance``) or ``invocations`` (``SageMakerVariantInvocationsPerInstance``).
        min_capacity / max_capacity / target: the scalable target's bounds and the policy's target value.
        scale_in_cooldown_s / scale_out_cooldown_s: the policy's cooldowns (None: the construct's defaults).
            https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling.html
    """

    variant: str
    instance_type: str | None
    kind: ScalingKind
    min_capacity: int
    max_capacity: int
    target: float
    scale_in_cooldown_s: int | None = None
    scale_out_cooldown_s: int | None = None


@dataclass(frozen=True)
class ResolvedComponents:
    """The inference components of an ``inference-components`` endpoint.

    Attributes:
        components: every component as configured, in config order (bases and adapters).
        instance_scaling: the endpoint's managed instance scaling (``min_instances: 0`` scales the endpoint
            to zero instances when no copy runs).
        rolling_update: the components' RollingUpdatePolicy (None: SageMaker's default blue/green).
        specifications: per base component, its compute on each instance type of the pooled variant
            (``per_instance_type``; empty: one specification, the component's own ``compute``).
            https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-deploy-models.html
        adapter_archives: per adapter with a local folder (``artifact_path``), the ``.tar.gz`` that
            ``smkit package`` writes from it and the stacks upload (ArtifactUrl names the upload); the local
            endpoint serves the folder itself.
    """

    components: tuple[InferenceComponentSpec, ...]
    instance_scaling: InstanceScaling
    rolling_update: RollingUpdate | None
    specifications: Mapping[str, tuple[tuple[str, ComputeRequirements], ...]]
    adapter_archives: Mapping[str, Path] = field(default_factory=dict)

    @property
    def bases(self) -> tuple[InferenceComponentSpec, ...]:
        """Components that run a container of the model (not adapters)."""
        return tuple(c for c in self.components if c.base_component is None)

    @property
    def adapters(self) -> tuple[InferenceComponentSpec, ...]:
        """Adapter components, loaded into their base component."""
        return tuple(c for c in self.components if c.base_component is not None)

    @property
    def scale_to_zero(self) -> bool:
        """The endpoint may release its last instance (``min_instances: 0``), and a component copy count may
        reach zero (``autoscaling.min_copies: 0``) for some component."""
        copies = any(c.autoscaling is not None and c.autoscaling.min_copies == 0 for c in self.bases)
        return self.instance_scaling.min_instances == 0 or copies


@dataclass(frozen=True)
class ResolvedDeployment:
    """A config's deployment as SageMaker will run it.

    Attributes:
        name / environment / account / region / description / tags: the deployment's identity and where
            it goes, as configured.
        endpoint_type: ``endpoint.type``.
        containers: every container, by config order (production and shadow).
        variants: the production variants (serverless: its one variant; inference components: the one
            model-less variant).
        shadow_variants: the shadow variants.
        payload_limit: the InvokeEndpoint request limit in bytes (serverless 4 MiB, else 6 MiB).
        inference_mode: ``serial`` or ``direct`` for a multi-container model, else None.
        network_isolation: ``EnableNetworkIsolation``.
        base_dir: what the config's relative paths were resolved against.
        serverless: ServerlessConfig of a serverless endpoint (None otherwise).
        asynchronous: AsyncInferenceConfig of an async endpoint (None otherwise).
        data_capture: DataCaptureConfig when capture is enabled (None: no section, or ``enabled: false``).
        guardrails: the endpoint's update strategy (blue/green or rolling, auto-rollback).
        scaling: the target-tracking policy of every variant that autoscales (production, shadow,
            serverless provisioned concurrency), in that order.
        components: the inference components (None unless ``endpoint.type: inference-components``).
        monitoring: alarms, their thresholds and subscribers, and log retention.
        kms: the key of the endpoint's data (a new one, or ``key_arn``).
        vpc: the containers' VpcConfig (None: no VPC).
        repository: the ECR repository stack's registry-wide options (enhanced scanning, signing).
        storage: the data bucket's lifecycle.
        written_prefixes: the bucket prefixes the endpoint writes (data capture, async input/output/failure).
        local: the local endpoint's own options.
        local_refusal: why the local endpoint does not run this deployment (None: it does).
        pipeline: the delivery pipeline (None: no pipeline section).
        metrics: the endpoint config's MetricsConfig (docs/observability.md).
        artifacts: what the packager lets a model's pickles name (``security.artifacts``).
        notices: what the loader could not check for lack of inputs on this machine (weights only in S3).
    """

    endpoint_type: EndpointType
    containers: tuple[ResolvedContainer, ...]
    variants: tuple[ResolvedVariant, ...]
    shadow_variants: tuple[ResolvedVariant, ...]
    payload_limit: int
    inference_mode: str | None
    network_isolation: bool
    base_dir: Path
    name: str
    environment: str
    account: str | None
    region: str | None
    description: str | None
    tags: Mapping[str, str]
    serverless: ServerlessSpec | None
    asynchronous: AsyncSpec | None
    data_capture: DataCapture | None
    guardrails: Deployment
    scaling: tuple[ResolvedScaling, ...]
    components: ResolvedComponents | None
    monitoring: Monitoring
    kms: Kms
    vpc: Vpc | None
    repository: Repository
    storage: StorageSpec
    written_prefixes: tuple[str, ...]
    local: LocalOptions
    local_refusal: str | None
    pipeline: PipelineSpec | None
    artifacts: Artifacts
    metrics: EndpointMetrics = field(default_factory=EndpointMetrics)
    # What the loader could not check on this machine (smkit.config.engine_checks), said by smkit synth.
    notices: tuple[str, ...] = field(default=(), compare=False)
    _by_name: dict[str, ResolvedContainer] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {c.name: c for c in self.containers})

    def container(self, name: str) -> ResolvedContainer:
        """The container called ``name`` (KeyError when there is none)."""
        return self._by_name[name]

    @property
    def production_containers(self) -> tuple[ResolvedContainer, ...]:
        """The containers of the production model (shadow variants' containers left out)."""
        shadows = {c for v in self.shadow_variants for c in v.containers}
        return tuple(c for c in self.containers if c.name not in shadows)

    @property
    def images(self) -> tuple[ResolvedImage, ...]:
        """Every distinct image the containers run, in container order."""
        seen: dict[str, ResolvedImage] = {}
        for c in self.containers:
            seen.setdefault(c.image.key, c.image)
        return tuple(seen.values())

    @property
    def uses_repository(self) -> bool:
        """Some image is pulled from or published to this deployment's ECR repository."""
        return any(image.uses_repository for image in self.images)

    @property
    def endpoint_kind(self) -> Literal["serverless"] | None:
        """``serverless`` for a serverless endpoint, None for an instance-based one: part of the endpoint's
        physical name, so that switching between the two replaces the endpoint instead of updating it in
        place, which SageMaker refuses (realtime -> serverless) or cannot roll back (serverless -> realtime)."""
        return "serverless" if self.endpoint_type == "serverless" else None

    @property
    def retains_instance_counts(self) -> bool:
        """Updates keep the variants' current instance counts (``RetainAllVariantProperties``): only when
        they are autoscaled (then every variant is, smkit.config.aws_rules.retained_counts)."""
        return bool(self.scaling)

    @property
    def variant_names(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``(production, shadow)`` variant names of the endpoint config."""
        return tuple(v.name for v in self.variants), tuple(v.name for v in self.shadow_variants)

    @property
    def s3_data_uris(self) -> frozenset[str]:
        """Model data, channels and adapter weights already in S3 that this deployment reads."""
        uris = {c.model_data.uri for c in self.containers if c.model_data.uri is not None}
        uris |= {ch.data.uri for c in self.containers for ch in c.channels if ch.data.uri is not None}
        if self.components is not None:
            uris |= {c.artifact_url for c in self.components.adapters if c.artifact_url is not None}
        return frozenset(uris)

    def container_for_data(self, path: Path) -> ResolvedContainer | None:
        """The container whose local model data is ``path`` (an archive or folder), if any."""
        wanted = path.resolve()
        return next((c for c in self.containers if c.model_data.path == wanted), None)
