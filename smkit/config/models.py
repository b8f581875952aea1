"""The root of the deployment configuration tree: one YAML file per deployment (variant x environment).

Each top-level section has its own module: ``image`` and ``model`` in :mod:`smkit.config.containers`,
``endpoint`` in :mod:`smkit.config.endpoint` (with :mod:`smkit.config.components`), ``security``,
``monitoring``, ``storage`` and ``pipeline`` in the modules of those names. Every node derives from
:class:`smkit.config.base.Frozen` (immutable, unknown keys rejected).

AWS references:
- Model: https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-sagemaker-model.html
- EndpointConfig: https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-sagemaker-endpointconfig.html
- Endpoint: https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-sagemaker-endpoint.html
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PrivateAttr

from smkit.aws.patterns import ACCOUNT_ID, REGION
from smkit.config.base import Frozen
from smkit.config.components import ShadowVariant
from smkit.config.containers import Container, ImageSource, ModelSpec
from smkit.config.endpoint import EndpointSpec, Variant
from smkit.config.local_options import LocalOptions
from smkit.config.monitoring import Monitoring
from smkit.config.pipeline import PipelineSpec
from smkit.config.security import Security
from smkit.config.storage import StorageSpec


class DeploymentConfig(Frozen):
    """One deployment: what ``cdk deploy`` builds and what ``smkit local-endpoint`` runs."""

    name: str = Field(pattern=r"^[a-z][a-z0-9-]{0,39}$", description="Prefix of stack names; lowercase.")
    environment: Literal["dev", "staging", "prod"] = "dev"
    account: str | None = Field(None, pattern=ACCOUNT_ID)
    region: str | None = Field(None, pattern=REGION)
    description: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    image: ImageSource
    model: ModelSpec
    endpoint: EndpointSpec
    security: Security = Field(default_factory=lambda: Security())
    monitoring: Monitoring = Field(default_factory=lambda: Monitoring())
    storage: StorageSpec = Field(default_factory=lambda: StorageSpec())
    local: LocalOptions = Field(
        default_factory=lambda: LocalOptions(),
        description="How smkit local-endpoint runs this deployment (signature checks); never in a template. "
        "Default: {verify_signatures: false}.",
    )
    pipeline: PipelineSpec | None = Field(
        None, description="CI/CD pipeline (``-c pipeline=true``); ignored by plain ``cdk deploy``."
    )
    # What parse_config could not check (smkit.config.engine_checks): said by smkit synth, never silent.
    _notices: tuple[str, ...] = PrivateAttr(())

    @property
    def notices(self) -> tuple[str, ...]:
        """What the loader could not check for lack of inputs on this machine (weights only in S3, ...)."""
        return self._notices

    def image_of(self, container: Container) -> ImageSource:
        """The image section ``container`` runs: its own ``image``, else the deployment's."""
        return container.image or self.image

    def image_sections(self) -> list[tuple[str, ImageSource]]:
        """Every image section written in the config with its YAML path, the top-level one first."""
        sections = [("image", self.image)]
        for i, c in enumerate(self.model.containers):
            if c.image is not None:
                sections.append((f"model.containers[{i}].image", c.image))
        return sections


def variant_paths(cfg: DeploymentConfig) -> list[tuple[str, Variant | ShadowVariant]]:
    """``(config path, variant)`` of every instance-backed variant: production variants, then shadow variants.

    Both are variants of the endpoint to Application Auto Scaling and to UpdateEndpoint, so the autoscaling
    and update rules hold for both alike."""
    production = [(f"endpoint.variants[{i}]", v) for i, v in enumerate(cfg.endpoint.variants)]
    shadows = [(f"endpoint.shadow_variants[{i}]", s) for i, s in enumerate(cfg.endpoint.shadow_variants)]
    return [*production, *shadows]
