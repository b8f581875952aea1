"""The ``security`` section: KMS encryption of the endpoint's data, VPC placement of its containers, and what
model files may import when they are unpickled (docs/security.md)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from smkit.config.base import Frozen

KMS_KEY_ARN = r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:(key|alias)/[\w/-]+$"
# module.name exactly, or module:name with * wildcards on either side (smkit/pickle_allow.py).
PICKLE_GLOBAL = r"^([A-Za-z_][\w.]*\.\w+|[A-Za-z_*][\w.*]*:[\w*\[\]-]+)$"


class Kms(Frozen):
    """Encryption of the endpoint's storage volumes, capture and async output: a new key or a given one."""

    create: bool = False
    key_arn: str | None = Field(None, pattern=KMS_KEY_ARN)


class Vpc(Frozen):
    """VpcConfig for the model containers (not for serverless)."""

    subnet_ids: list[str] = Field(min_length=1, max_length=16)
    security_group_ids: list[str] = Field(min_length=1, max_length=5)


class Artifacts(Frozen):
    """What pickle-format model files (pickle, joblib, torch.save) may import when they are loaded."""

    allow_globals: list[Annotated[str, Field(pattern=PICKLE_GLOBAL)]] = Field(
        default_factory=list,
        description="Pickle globals allowed beyond the built-in framework tables (NumPy, scikit-learn, pandas, "
        "XGBoost, LightGBM, torch tensors): module.name exactly (mypackage.model.MyModel), or module:name with "
        "* wildcards. smkit package refuses any other global a model file would import, and records these "
        "entries in the archive's manifest for the serving runtime's check before model_fn, which runs where "
        "SageMaker unpacks the model data (ContainerDefinition.ModelDataUrl, "
        "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ContainerDefinition.html). Default: none.",
    )


class Security(Frozen):
    kms: Kms = Field(default_factory=lambda: Kms(create=True))
    vpc: Vpc | None = None
    artifacts: Artifacts = Field(
        default_factory=lambda: Artifacts(),
        description="The check of model files before they load (docs/security.md): in smkit package and in "
        "the serving runtime, on the model data SageMaker downloads "
        "(https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ContainerDefinition.html). "
        "Default: the framework tables only.",
    )
