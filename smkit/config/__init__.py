"""Deployment configuration: typed, frozen, validated on load.

``load_config("config/realtime.yaml")`` returns a :class:`DeploymentConfig` or raises :class:`ConfigError`
listing every problem with its YAML path, the bad value and what is allowed; ``load_deployment`` of the same
file returns what it means on SageMaker (:class:`smkit.config.resolved.ResolvedDeployment`), the one input of
the stacks, the local endpoint and ``smkit deploy``.
"""

from smkit.config.components import (
    ComputeRequirements,
    CopyScaling,
    InferenceComponentSpec,
    InferenceComponentsSpec,
    InstanceScaling,
    RollingUpdate,
    ShadowVariant,
)
from smkit.config.containers import (
    BuildImage,
    Container,
    DlcImage,
    EcrImage,
    ImageSource,
    ModelDataSpec,
    ModelSpec,
)
from smkit.config.endpoint import (
    AsyncSpec,
    Autoscaling,
    DataCapture,
    Deployment,
    EndpointSpec,
    ServerlessAutoscaling,
    ServerlessSpec,
    Variant,
)
from smkit.config.loader import ConfigError, load_config, load_deployment, parse_config
from smkit.config.models import DeploymentConfig
from smkit.config.monitoring import Monitoring
from smkit.config.resolved.paths import absolute_paths
from smkit.config.rules import Issue
from smkit.config.security import Kms, Security, Vpc

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
    "InferenceComponentSpec",
    "InferenceComponentsSpec",
    "InstanceScaling",
    "Issue",
    "Kms",
    "ModelDataSpec",
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
    "load_deployment",
    "parse_config",
]
