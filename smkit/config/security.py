"""The ``security`` section: KMS encryption of the endpoint's data and VPC placement of its containers."""

from __future__ import annotations

from pydantic import Field

from smkit.config.base import Frozen

KMS_KEY_ARN = r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:(key|alias)/[\w/-]+$"


class Kms(Frozen):
    """Encryption of the endpoint's storage volumes, capture and async output: a new key or a given one."""

    create: bool = False
    key_arn: str | None = Field(None, pattern=KMS_KEY_ARN)


class Vpc(Frozen):
    """VpcConfig for the model containers (not for serverless)."""

    subnet_ids: list[str] = Field(min_length=1, max_length=16)
    security_group_ids: list[str] = Field(min_length=1, max_length=5)


class Security(Frozen):
    kms: Kms = Field(default_factory=lambda: Kms(create=True))
    vpc: Vpc | None = None
