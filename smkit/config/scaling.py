"""Instance-count autoscaling of an instance-backed variant, production or shadow (shared by
:mod:`smkit.config.endpoint` and :mod:`smkit.config.components`).

https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling.html
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from smkit.aws.limits import MIN_CAPACITY_SIZE
from smkit.config.base import Frozen

if TYPE_CHECKING:
    from smkit.config.components import ShadowVariant
    from smkit.config.endpoint import Variant
    from smkit.config.models import DeploymentConfig


class Autoscaling(Frozen):
    """Target tracking on ``sagemaker:variant:DesiredInstanceCount``.

    Realtime, multi-model and multi-container track ``SageMakerVariantInvocationsPerInstance``; async tracks
    ``ApproximateBacklogSizePerInstance`` and may scale to zero.
    """

    min_capacity: int = Field(ge=0)
    max_capacity: int = Field(ge=MIN_CAPACITY_SIZE)
    target_invocations_per_instance: int | None = Field(None, ge=1)
    target_backlog_per_instance: float | None = Field(None, gt=0)
    scale_in_cooldown_seconds: int = Field(300, ge=0)
    scale_out_cooldown_seconds: int = Field(60, ge=0)


def variant_paths(cfg: DeploymentConfig) -> list[tuple[str, Variant | ShadowVariant]]:
    """``(config path, variant)`` of every instance-backed variant: production variants, then shadow variants.

    Both are variants of the endpoint to Application Auto Scaling and to UpdateEndpoint, so the autoscaling
    and update rules hold for both alike."""
    production = [(f"endpoint.variants[{i}]", v) for i, v in enumerate(cfg.endpoint.variants)]
    shadows = [(f"endpoint.shadow_variants[{i}]", s) for i, s in enumerate(cfg.endpoint.shadow_variants)]
    return [*production, *shadows]
