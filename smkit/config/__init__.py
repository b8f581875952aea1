"""Deployment configuration: typed, frozen, validated on load.

``load_config("config/realtime.yaml")`` returns a :class:`DeploymentConfig` or raises :class:`ConfigError`
listing every problem with its YAML path, the bad value and what is allowed.
"""

from smkit.config.components import (
    ComputeRequirements,
    CopyScaling,
    InferenceComponent,
    InferenceComponentsSpec,
    InstanceScaling,
    RollingUpdate,
    ShadowVariant,
)
from smkit.config.loader import ConfigError, absolute_paths, load_config, parse_config
from smkit.config.models import (
    AsyncSpec,
    Autoscaling,
    BuildImage,
    Container,
    DataCapture,
    Deployment,
    DeploymentConfig,
    DlcImage,
    EcrImage,
    EndpointSpec,
    ImageSource,
    Kms,
    ModelData,
    ModelSpec,
    Monitoring,
    Security,
    ServerlessAutoscaling,
    ServerlessSpec,
    Variant,
    Vpc,
)
from smkit.config.rules import Issue

__all__ = [
    "AsyncSpec",
    "Autoscaling",
    "BuildImage",
    "ConfigError",
    "ComputeRequirements",
    "Container",
    "CopyScaling",
    "DataCapture",
    "Deployment",
    "DeploymentConfig",
    "DlcImage",
    "EcrImage",
    "EndpointSpec",
    "ImageSource",
    "InferenceComponent",
    "InferenceComponentsSpec",
    "InstanceScaling",
    "Issue",
    "Kms",
    "ModelData",
    "ModelSpec",
    "Monitoring",
    "RollingUpdate",
    "Security",
    "ServerlessAutoscaling",
    "ServerlessSpec",
    "ShadowVariant",
    "Variant",
    "Vpc",
    "absolute_paths",
    "load_config",
    "parse_config",
]
