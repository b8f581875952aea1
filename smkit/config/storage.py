"""The ``storage`` section: lifecycle of the endpoint's data bucket."""

from __future__ import annotations

from pydantic import Field

from smkit.config.base import Frozen


class StorageSpec(Frozen):
    """Lifecycle of the endpoint's data bucket (captured requests, async results, model data sets).

    https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-lifecycle-mgmt.html
    """

    expire_days: dict[str, int] = Field(
        default_factory=dict,
        description="Days after which objects under a prefix of the data bucket expire, e.g. "
        "{data-capture: 90, async/output: 30}. The prefix must be one this deployment writes (data capture, "
        "async input/output/failure). Default: none (kept until you delete them).",
    )
    superseded_model_days: int = Field(
        30,
        ge=1,
        description="Days after which a superseded copy of model data under models/ expires: one the deploy step "
        "(scripts/deploy.py) tagged smkit:superseded=true because no live model and no recorded release "
        "(the rollback history) uses it any more. What a live model uses is never tagged, so never expires. "
        "Default 30. https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-lifecycle-mgmt.html",
    )
    noncurrent_version_days: int = Field(
        30,
        ge=1,
        description="Days after which overwritten or deleted object versions expire (the bucket is "
        "versioned). Default 30.",
    )
