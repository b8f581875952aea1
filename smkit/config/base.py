"""The base of every config node and the name patterns several sections share.

Every model is frozen and forbids unknown keys, so a typo is an error instead of a silently ignored setting.
Field names are the YAML keys. Single-field limits live on the fields (``Field`` constraints); rules that
involve several fields live in :mod:`smkit.config.rules`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

# CloudFormation name patterns (VariantName, ContainerHostname, ...): alphanumerics and hyphens, <= 63.
AWS_NAME = r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"
ACCOUNT_ID = r"^\d{12}$"
REGION = r"^[a-z]{2}(-[a-z]+)+-\d$"


class Frozen(BaseModel):
    """Base of every config node: immutable, unknown keys rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
