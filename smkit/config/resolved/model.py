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

from smkit.config.resolved.environment import WorkerCount, worker_count
from smkit.config.resolved.images import ResolvedImage
from smkit.contract import uses_huggingface_defaults

DataKind = Literal["archive", "prefix", "multi-model"]


@dataclass(frozen=True)
class ResolvedModelData:
    """A container's model data as SageMaker reads it.

    Attributes:
        kind: ``archive`` (one ``model.tar.gz``, ``ModelDataUrl``), ``prefix`` (uncompressed,
            ``S3DataType: S3Prefix``, ``CompressionType: None``) or ``multi-model`` (the prefix of a
            multi-model endpoint's ``*.tar.gz`` models, container ``Mode: MultiModel``).
        path: the absolute local file or directory (None: the data is already in S3).
        uri: the S3 URI of data already in S3 (None: local data the stacks upload).
        kms_key_arn: the key encrypting data already in S3, if any.
        cache_enabled: ``MultiModelConfig.ModelCacheSetting`` (multi-model only).
        accept_eula: ``ModelAccessConfig.AcceptEula`` of an uncompressed prefix in S3 (gated weights).
    """

    kind: DataKind
    path: Path | None = None
    uri: str | None = None
    kms_key_arn: str | None = None
    cache_enabled: bool = True
    accept_eula: bool = False

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
class ResolvedContainer:
    """One ContainerDefinition.

    Attributes:
        name / hostname: the config's container name and ``ContainerHostname`` (direct mode).
        image: the image it runs.
        model_data: its model data.
        environment: the full ``Environment`` SageMaker passes (:mod:`smkit.config.resolved.environment`).
        profile: the serving runtime's profile, as ``SMKIT_PROFILE`` says.
        network_isolation: ``EnableNetworkIsolation`` of its Model.
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


@dataclass(frozen=True)
class ResolvedDeployment:
    """A config's deployment as SageMaker will run it.

    Attributes:
        endpoint_type: ``endpoint.type``.
        containers: every container, by config order (production and shadow).
        variants: the production variants (serverless: its one variant; inference components: the one
            model-less variant).
        shadow_variants: the shadow variants.
        payload_limit: the InvokeEndpoint request limit in bytes (serverless 4 MiB, else 6 MiB).
        inference_mode: ``serial`` or ``direct`` for a multi-container model, else None.
        network_isolation: ``EnableNetworkIsolation``.
        base_dir: what the config's relative paths were resolved against.
        config: the :class:`~smkit.config.DeploymentConfig` it was resolved from.
    """

    endpoint_type: str
    containers: tuple[ResolvedContainer, ...]
    variants: tuple[ResolvedVariant, ...]
    shadow_variants: tuple[ResolvedVariant, ...]
    payload_limit: int
    inference_mode: str | None
    network_isolation: bool
    base_dir: Path
    config: object = field(default=None, repr=False, compare=False)
    _by_name: dict[str, ResolvedContainer] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._by_name.update({c.name: c for c in self.containers})

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

    def container_for_data(self, path: Path) -> ResolvedContainer | None:
        """The container whose local model data is ``path`` (an archive or folder), if any."""
        wanted = path.resolve()
        return next((c for c in self.containers if c.model_data.path == wanted), None)
