"""Instance-count autoscaling of an instance-backed variant, production or shadow (shared by
:mod:`smkit.config.endpoint` and :mod:`smkit.config.components`).

https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling.html
"""

from __future__ import annotations

from pydantic import Field

from smkit.aws.limits import MAX_TARGET_VALUE, MIN_CAPACITY_SIZE
from smkit.config.base import Frozen


class Autoscaling(Frozen):
    """Target tracking on ``sagemaker:variant:DesiredInstanceCount``.

    Realtime, multi-model and multi-container track ``SageMakerVariantInvocationsPerInstance``; async tracks
    ``ApproximateBacklogSizePerInstance`` and may scale to zero.
    """

    min_capacity: int = Field(ge=0)
    max_capacity: int = Field(ge=MIN_CAPACITY_SIZE)
    target_invocations_per_instance: int | None = Field(None, ge=1, le=MAX_TARGET_VALUE)
    target_backlog_per_instance: float | None = Field(None, gt=0, le=MAX_TARGET_VALUE)
    scale_in_cooldown_seconds: int = Field(300, ge=0)
    scale_out_cooldown_seconds: int = Field(60, ge=0)
