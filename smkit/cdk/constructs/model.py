"""AWS::SageMaker::Model: one container, a multi-model container, or a Serial/Direct multi-container model.

https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-sagemaker-model.html
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from smkit.aws.limits import MAX_CONTAINERS
from smkit.cdk.constructs.api_model import ApiModel
from smkit.cdk.constructs.arns import sagemaker_arn
from smkit.cdk.constructs.model_data import BoundChannel, BoundModelData
from smkit.cdk.constructs.network import place, vpc_config

INFERENCE_MODES = {"serial": "Serial", "direct": "Direct"}


@dataclass(frozen=True)
class ContainerSpec:
    """One ContainerDefinition; ``channels``: its AdditionalModelDataSources (then the model is created
    through the API, :mod:`smkit.cdk.constructs.api_model`)."""

    image_uri: str
    model_data: BoundModelData
    environment: Mapping[str, str] = field(default_factory=dict)
    hostname: str | None = None
    channels: Sequence[BoundChannel] = ()


@runtime_checkable
class IModel(Protocol):
    """A SageMaker Model an endpoint config can serve: one this app creates (:class:`InferenceModel`) or one
    it names (:meth:`InferenceModel.from_model_name`)."""

    @property
    def model_name(self) -> str: ...

    @property
    def model_arn(self) -> str: ...


class ImportedModel(cdk.Resource):
    """A Model this app does not create, named by ``model_name`` (:meth:`InferenceModel.from_model_name`)."""

    def __init__(self, scope: Construct, id_: str, *, model_name: str) -> None:
        super().__init__(scope, id_)
        if not model_name:
            raise ValueError(f"{self.node.path}: model_name='': give the deployed ModelName")
        # The ModelName given, and its ARN in this stack's account and region.
        self.model_name = model_name
        self.model_arn = sagemaker_arn(self, "model", model_name)


class InferenceModel(cdk.Resource):
    """A SageMaker Model with a generated name (a changed model is a replacement, docs/cloudformation.md).

    ``role``: the execution role SageMaker runs the containers with (``ExecutionRole.role``, or any
    ``iam.IRole`` that trusts ``sagemaker.amazonaws.com``); it must be allowed to pull the images and read the
    model data (``ServingImage.bind`` and ``ModelData.bind`` grant that).

    A container with ``channels`` (AdditionalModelDataSources, which ``AWS::SageMaker::Model`` cannot carry)
    makes the model a ``Custom::SageMakerModel`` created through CreateModel
    (:class:`~smkit.cdk.constructs.api_model.ApiModel`; ``log_group`` takes its function's logs); it is
    referred to by name and ARN alike.

    ``vpc``, ``vpc_subnets``, ``security_groups``: the VpcConfig the containers attach to
    (:func:`smkit.cdk.constructs.network.place`: the VPC's private subnets and a new security group unless
    chosen); the model is then an ``ec2.IConnectable`` (:attr:`connections`). The role needs the network
    interface permissions (``ExecutionRole.grant_vpc_access(model)``).
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        role: iam.IRole,
        containers: Sequence[ContainerSpec],
        inference_mode: str | None = None,
        network_isolation: bool = True,
        vpc: ec2.IVpc | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        log_group: logs.ILogGroup | None = None,
    ) -> None:
        super().__init__(scope, id_)
        _validate(containers, inference_mode)
        self.role = role
        self.placement = place(self, vpc=vpc, vpc_subnets=vpc_subnets, security_groups=security_groups)
        self.api: ApiModel | None = None
        self.resource: Construct
        if any(c.channels for c in containers):
            self.api = ApiModel(
                self,
                "Api",
                role=role,
                request=self._request(containers, inference_mode, network_isolation),
                log_group=log_group,
            )
            self.resource = self.api.resource
            # The model's name and ARN, as the custom resource answers them (Fn::GetAtt).
            self.model_name: str = self.api.model_name
            self.model_arn: str = self.api.model_arn
        else:
            cfn_model = self._cfn_model(containers, inference_mode, network_isolation)
            self.resource = cfn_model
            # The generated model name, and the ARN (the resource's Ref).
            self.model_name = cfn_model.attr_model_name
            self.model_arn = cfn_model.ref
        for c in containers:
            for dependency in (c.model_data.dependency, *(ch.dependency for ch in c.channels)):
                if dependency is not None:
                    self.resource.node.add_dependency(dependency)

    def _cfn_model(
        self, containers: Sequence[ContainerSpec], inference_mode: str | None, network_isolation: bool
    ) -> sagemaker.CfnModel:
        definitions = [_definition(c) for c in containers]
        single = len(definitions) == 1
        return sagemaker.CfnModel(
            self,
            "Resource",
            execution_role_arn=self.role.role_arn,
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
            vpc_config=vpc_config(self.placement, sagemaker.CfnModel.VpcConfigProperty),
        )

    def _request(
        self, containers: Sequence[ContainerSpec], inference_mode: str | None, network_isolation: bool
    ) -> dict[str, Any]:
        """CreateModel's request (without ModelName and ExecutionRoleArn), as ``AWS::SageMaker::Model``'s
        properties are written, with each container's AdditionalModelDataSources."""
        definitions = [_request_definition(c) for c in containers]
        request: dict[str, Any] = {"EnableNetworkIsolation": network_isolation}
        if len(definitions) == 1:
            request["PrimaryContainer"] = definitions[0]
        else:
            request["Containers"] = definitions
            request["InferenceExecutionConfig"] = {"Mode": INFERENCE_MODES[inference_mode or "serial"]}
        if self.placement:
            request["VpcConfig"] = {
                "Subnets": self.placement.subnet_ids,
                "SecurityGroupIds": self.placement.security_group_ids,
            }
        return request

    @staticmethod
    def from_model_name(scope: Construct, id_: str, model_name: str) -> IModel:
        """A Model deployed elsewhere, by its ModelName (for an endpoint config of this app)."""
        return ImportedModel(scope, id_, model_name=model_name)

    @property
    def connections(self) -> ec2.Connections:
        """The security groups of a model in a VPC (``ec2.IConnectable``)."""
        if self.placement is None:
            raise ValueError(f"{self.node.path}: the model is in no VPC; give vpc= to connect it")
        return self.placement.connections


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
    elif any(c.hostname for c in containers) and not all(c.hostname for c in containers):
        # https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ContainerDefinition.html
        problems.append(
            "containers: a hostname on every container of a pipeline or on none (ContainerHostName: "
            '"you must specify a value for the ContainerHostName parameter of every ContainerDefinition in that '
            'pipeline")'
        )
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


def _request_definition(c: ContainerSpec) -> dict[str, Any]:
    """A ContainerDefinition as CreateModel takes it: the fields :func:`_definition` gives
    ``AWS::SageMaker::Model``, and AdditionalModelDataSources."""
    data = c.model_data
    definition: dict[str, Any] = {
        "Mode": "MultiModel" if data.multi_model else "SingleModel",
        "AdditionalModelDataSources": [channel.definition() for channel in c.channels],
    }
    if data.model_package_name:
        definition["ModelPackageName"] = data.model_package_name
    else:
        definition["Image"] = c.image_uri
    if c.hostname:
        definition["ContainerHostname"] = c.hostname
    if c.environment:
        definition["Environment"] = dict(c.environment)
    if data.model_data_url is not None:
        definition["ModelDataUrl"] = data.model_data_url
    if data.model_data_source is not None:
        source = data.model_data_source.s3_data_source
        assert isinstance(source, sagemaker.CfnModel.S3DataSourceProperty)
        s3: dict[str, Any] = {
            "S3Uri": source.s3_uri,
            "S3DataType": source.s3_data_type,
            "CompressionType": source.compression_type,
        }
        if isinstance(source.model_access_config, sagemaker.CfnModel.ModelAccessConfigProperty):
            s3["ModelAccessConfig"] = {"AcceptEula": source.model_access_config.accept_eula}
        definition["ModelDataSource"] = {"S3DataSource": s3}
    if data.multi_model:
        definition["MultiModelConfig"] = {
            "ModelCacheSetting": "Enabled" if data.cache_enabled else "Disabled"
        }
    return definition
