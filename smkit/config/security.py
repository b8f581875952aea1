"""The ``security`` section: KMS encryption of the endpoint's data, VPC placement of its containers, what
model files may import when they are unpickled, and the supply-chain options of the image's ECR repository
(docs/security.md)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from smkit.aws.limits import MAX_SECURITY_GROUPS, MAX_SUBNETS
from smkit.aws.patterns import KMS_KEY_ARN
from smkit.config.base import Frozen

# module.name exactly, or module:name with * wildcards on either side (smkit/pickle_allow.py).
PICKLE_GLOBAL = r"^([A-Za-z_][\w.]*\.\w+|[A-Za-z_*][\w.*]*:[\w*\[\]-]+)$"


class Kms(Frozen):
    """Encryption of the endpoint's storage volumes, capture and async output: a new key or a given one."""

    create: bool = False
    key_arn: str | None = Field(None, pattern=KMS_KEY_ARN)


class Vpc(Frozen):
    """VpcConfig for the model containers (not for serverless)."""

    subnet_ids: list[str] = Field(min_length=1, max_length=MAX_SUBNETS)
    security_group_ids: list[str] = Field(min_length=1, max_length=MAX_SECURITY_GROUPS)


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


class Repository(Frozen):
    """Registry-wide options of the ECR repository stack (smkit.cdk.constructs.repository), off by default.

    ECR keeps one scanning configuration and one signing configuration per registry (account and region):
    deploying either replaces the registry's existing one, hence opt-in.
    """

    enhanced_scanning: bool = Field(
        False,
        description="Amazon Inspector scans this repository's images on push and again whenever a new "
        "vulnerability is published (AWS::ECR::RegistryScanningConfiguration, ENHANCED, CONTINUOUS_SCAN); "
        "the account must have Amazon Inspector enabled, and it replaces the registry's scanning "
        "configuration. Default: false (basic scan on push). "
        "https://docs.aws.amazon.com/AmazonECR/latest/userguide/image-scanning-enhanced.html",
    )
    signing: bool = Field(
        False,
        description="ECR managed signing: every image pushed to this repository is signed with a new AWS "
        "Signer profile (AWS::ECR::SigningConfiguration; the stack outputs SigningProfileArn); replaces the "
        "registry's signing configuration. Default: false. "
        "https://docs.aws.amazon.com/AmazonECR/latest/userguide/managed-signing.html",
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
    repository: Repository = Field(
        default_factory=lambda: Repository(),
        description="Supply-chain options of the serving image's ECR repository stack (image source build or "
        "ecr; a deployment of dlc URIs only has none), docs/security.md. Default: {enhanced_scanning: false, "
        "signing: false}. https://docs.aws.amazon.com/AmazonECR/latest/userguide/Repositories.html",
    )
