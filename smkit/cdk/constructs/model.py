"""AWS::SageMaker::Model: one container, a multi-model container, or a Serial/Direct multi-container model.

https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-sagemaker-model.html
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from smkit.aws.limits import MAX_CONTAINERS
from smkit.cdk.constructs.model_data import BoundModelData

INFERENCE_MODES = {"serial": "Serial", "direct": "Direct"}


@dataclass(frozen=True)
class ContainerSpec:
    """One ContainerDefinition."""

    image_uri: str
    model_data: BoundModelData
    environment: Mapping[str, str] = field(default_factory=dict)
    hostname: str | None = None


@dataclass(frozen=True)
class VpcSettings:
    """Model VpcConfig."""

    subnet_ids: Sequence[str]
    security_group_ids: Sequence[str]


class InferenceModel(Construct):
    """A SageMaker Model with a generated name (a changed model is a replacement, docs/cloudformation.md)."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        execution_role_arn: str,
        containers: Sequence[ContainerSpec],
        inference_mode: str | None = None,
        network_isolation: bool = True,
        vpc: VpcSettings | None = None,
    ) -> None:
        super().__init__(scope, id_)
        _validate(containers, inference_mode)
        definitions = [_definition(c) for c in containers]
        single = len(definitions) == 1
        self.resource = sagemaker.CfnModel(
            self,
            "Resource",
            execution_role_arn=execution_role_arn,
            primary_container=definitions[0] if single else None,
            containers=None if single else definitions,
            inference_execution_config=(
                None
                if single
                else sagemaker.CfnModel.InferenceExecutionConfigProperty(
                    mode=INFERENCE_MODES[inference_mode or "serial"]
                )
            ),
            enable_network_isolation=network_isolation,
            vpc_config=(
                sagemaker.CfnModel.VpcConfigProperty(
                    subnets=list(vpc.subnet_ids), security_group_ids=list(vpc.security_group_ids)
                )
                if vpc
                else None
            ),
        )
        for c in containers:
            if c.model_data.dependency is not None:
                self.resource.node.add_dependency(c.model_data.dependency)

    @property
    def model_name(self) -> str:
        """The generated model name."""
        return self.resource.attr_model_name


def _validate(containers: Sequence[ContainerSpec], inference_mode: str | None) -> None:
    problems = []
    if not 1 <= len(containers) <= MAX_CONTAINERS:
        problems.append(f"containers: {len(containers)} given (must be 1-{MAX_CONTAINERS})")
    if inference_mode is not None and inference_mode not in INFERENCE_MODES:
        problems.append(f"inference_mode={inference_mode!r} (must be one of {sorted(INFERENCE_MODES)})")
    if inference_mode == "direct":
        problems += [
            f"container {i}: hostname missing (direct mode routes by TargetContainerHostname)"
            for i, c in enumerate(containers)
            if not c.hostname
        ]
    if len(containers) > 1 and any(c.model_data.multi_model for c in containers):
        problems.append("a multi-model container must be the only container")
    if problems:
        raise ValueError("Invalid SageMaker model: " + "; ".join(problems))


def _definition(c: ContainerSpec) -> sagemaker.CfnModel.ContainerDefinitionProperty:
    data = c.model_data
    return sagemaker.CfnModel.ContainerDefinitionProperty(
        # A model package names its image and model data; CreateModel takes ModelPackageName instead.
        image=None if data.model_package_name else c.image_uri,
        model_package_name=data.model_package_name,
        container_hostname=c.hostname,
        environment=dict(c.environment) or None,
        mode="MultiModel" if data.multi_model else "SingleModel",
        model_data_url=data.model_data_url,
        model_data_source=data.model_data_source,
        multi_model_config=(
            sagemaker.CfnModel.MultiModelConfigProperty(
                model_cache_setting="Enabled" if data.cache_enabled else "Disabled"
            )
            if data.multi_model
            else None
        ),
    )
