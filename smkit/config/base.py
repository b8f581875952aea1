"""The base of every config node and the name patterns several sections share.

Every model is frozen and forbids unknown keys, so a typo is an error instead of a silently ignored setting.
Field names are the YAML keys. Single-field limits live on the fields (``Field`` constraints); rules that
involve several fields live in :mod:`smkit.config.rules`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

# AWS name patterns (VariantName, ContainerHostname, ...), account ids and regions: smkit.aws.patterns.
from smkit.aws.patterns import ACCOUNT_ID, AWS_NAME, REGION

__all__ = ["ACCOUNT_ID", "AWS_NAME", "REGION", "Frozen"]


class Frozen(BaseModel):
    """Base of every config node: immutable, unknown keys rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
