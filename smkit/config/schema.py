"""The JSON Schema of a deployment config, for editors: completion, hover text and checks while typing.

``config/schema.json`` is generated from the pydantic models (``smkit config-schema``) and checked in; a test
fails when it is stale. Every property's description says what the field is, its default when it has one,
and the AWS documentation page it maps to. Descriptions come from the models' ``Field(description=...)``;
:data:`FIELD_DOCS` supplies them for fields declared without one, and :data:`AWS_DOCS` names the AWS page
of each section. Editors pick the schema up from a first line in the YAML file (yaml-language-server)::

    # yaml-language-server: $schema=./schema.json

The schema checks the shape of one file (types, ranges, allowed keys); the rules across fields
(``smkit.config.rules``) still run when the config is loaded.
"""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from smkit.config.models import DeploymentConfig

SM = "https://docs.aws.amazon.com/sagemaker/latest"
_LINK = re.compile(r"https://[\w.-]+\.[a-z]{2,}/")
CFN = "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide"

# The AWS page each section of the config maps to.
AWS_DOCS: dict[str, str] = {
    "LocalOptions": f"{SM}/APIReference/API_runtime_InvokeEndpoint.html",
    "DeploymentConfig": f"{SM}/dg/realtime-endpoints-deploy-models.html",
    "BuildImage": "https://docs.aws.amazon.com/cdk/api/v2/python/aws_cdk.aws_ecr_assets/DockerImageAsset.html",
    "EcrImage": f"{SM}/APIReference/API_ContainerDefinition.html",
    "DlcImage": f"{SM}/APIReference/API_ContainerDefinition.html",
    "ModelSpec": f"{CFN}/aws-resource-sagemaker-model.html",
    "Container": f"{SM}/APIReference/API_ContainerDefinition.html",
    "Batching": f"{SM}/APIReference/API_ContainerDefinition.html",
    "ModelDataSpec": f"{SM}/APIReference/API_S3ModelDataSource.html",
    "ModelDataChannel": f"{SM}/APIReference/API_AdditionalModelDataSource.html",
    "EndpointSpec": f"{CFN}/aws-resource-sagemaker-endpointconfig.html",
    "Variant": f"{SM}/APIReference/API_ProductionVariant.html",
    "CapacityReservation": f"{SM}/APIReference/API_ProductionVariantCapacityReservationConfig.html",
    "InstancePool": f"{SM}/APIReference/API_InstancePool.html",
    "ComputeForInstanceType": f"{SM}/APIReference/API_CreateInferenceComponent.html",
    "Scheduling": f"{SM}/APIReference/API_InferenceComponentSchedulingConfig.html",
    "Autoscaling": f"{SM}/dg/endpoint-auto-scaling.html",
    "ServerlessSpec": f"{SM}/APIReference/API_ProductionVariantServerlessConfig.html",
    "ServerlessAutoscaling": f"{SM}/dg/serverless-endpoints-autoscale.html",
    "AsyncSpec": f"{SM}/APIReference/API_AsyncInferenceConfig.html",
    "Deployment": f"{SM}/dg/deployment-guardrails.html",
    "DataCapture": f"{SM}/APIReference/API_DataCaptureConfig.html",
    "EndpointMetrics": f"{SM}/APIReference/API_MetricsConfig.html",
    "CoreDumps": f"{SM}/APIReference/API_ProductionVariantCoreDumpConfig.html",
    "InferenceComponentsSpec": f"{SM}/dg/realtime-endpoints-deploy-models.html",
    "InstanceScaling": f"{SM}/APIReference/API_ProductionVariantManagedInstanceScaling.html",
    "InferenceComponentSpec": f"{CFN}/aws-resource-sagemaker-inferencecomponent.html",
    "ComputeRequirements": f"{SM}/APIReference/API_InferenceComponentComputeResourceRequirements.html",
    "CopyScaling": f"{SM}/dg/endpoint-auto-scaling.html",
    "RollingUpdate": f"{SM}/APIReference/API_InferenceComponentRollingUpdatePolicy.html",
    "ShadowVariant": f"{SM}/dg/shadow-tests.html",
    "Security": f"{SM}/dg/encryption-at-rest.html",
    "Kms": f"{SM}/APIReference/API_CreateEndpointConfig.html",
    "Vpc": f"{SM}/dg/host-vpc.html",
    "Artifacts": f"{SM}/APIReference/API_ContainerDefinition.html",
    "Repository": "https://docs.aws.amazon.com/AmazonECR/latest/userguide/image-scanning-enhanced.html",
    "Monitoring": f"{SM}/dg/monitoring-cloudwatch.html",
    "PipelineSpec": "https://docs.aws.amazon.com/cdk/v2/guide/cdk-pipeline.html",
    "ConnectionSource": "https://docs.aws.amazon.com/dtconsole/latest/userguide/welcome-connections.html",
    "CodeCommitSource": "https://docs.aws.amazon.com/codecommit/latest/userguide/welcome.html",
    "StageTarget": "https://docs.aws.amazon.com/cdk/v2/guide/bootstrapping.html",
    "EmailSubscription": "https://docs.aws.amazon.com/sns/latest/dg/sns-email-notifications.html",
    "HttpsSubscription": "https://docs.aws.amazon.com/sns/latest/dg/sns-http-https-endpoint-as-subscriber.html",
    "TopicSubscription": "https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html",
    "StorageSpec": "https://docs.aws.amazon.com/AmazonS3/latest/userguide/object-lifecycle-mgmt.html",
}

# Descriptions of the fields declared without ``Field(description=...)``, by ``Model.field``.
FIELD_DOCS: dict[str, str] = {
    "DeploymentConfig.environment": "Deployment environment; part of stack names and of the release record.",
    "DeploymentConfig.account": "AWS account to deploy to; default: the CDK CLI's credentials.",
    "DeploymentConfig.region": "AWS region to deploy to; default: the CDK CLI's credentials.",
    "DeploymentConfig.description": "Free text, shown as the stacks' description.",
    "DeploymentConfig.tags": "Tags on every resource of the stacks.",
    "DeploymentConfig.image": "The serving image: build (from container/), ecr (repository + tag) or dlc (URI).",
    "DeploymentConfig.model": "The SageMaker Model: its containers and how they run.",
    "DeploymentConfig.endpoint": "The endpoint type and its EndpointConfig and Endpoint settings.",
    "DeploymentConfig.security": "KMS encryption and VPC placement.",
    "DeploymentConfig.monitoring": "CloudWatch alarms and dashboard.",
    "DeploymentConfig.storage": "Lifecycle of the endpoint's data bucket.",
    "EmailSubscription.type": "email: notifications to an address (confirmed once by its owner).",
    "EmailSubscription.address": "The email address.",
    "HttpsSubscription.type": "https: notifications POSTed to a URL.",
    "HttpsSubscription.url": "The endpoint's URL (https only).",
    "TopicSubscription.type": "sns: notifications also published to an existing topic.",
    "TopicSubscription.topic_arn": "ARN of that SNS topic.",
    "BuildImage.source": "build: a CDK Docker image asset built from a local context.",
    "EcrImage.source": "ecr: an image already in ECR.",
    "DlcImage.source": "dlc: a full image URI (an AWS Deep Learning Container or any ECR image).",
    "DlcImage.uri": "ACCOUNT.dkr.ecr.REGION.amazonaws.com/NAME:TAG or @sha256:DIGEST.",
    "ModelSpec.containers": "One container, or 2-15 for a multi-container endpoint.",
    "Container.name": "Container name: letters, digits and hyphens, <= 63 characters.",
    "Container.model_data": "Where the container's model data comes from.",
    "ModelDataSpec.source": "archive (model.tar.gz), prefix (uncompressed folder), multi-model (folder of "
    "archives), s3 (already in S3) or model-package (a model registry version).",
    "EndpointSpec.type": "Endpoint type; decides which of the sections below apply.",
    "EndpointSpec.variants": "Instance-backed production variants (not for serverless).",
    "EndpointSpec.serverless": "ServerlessConfig; serverless only.",
    "EndpointSpec.async_": "AsyncInferenceConfig; async only.",
    "EndpointSpec.deployment": "Deployment guardrails for updates.",
    "EndpointSpec.data_capture": "DataCaptureConfig; not for serverless.",
    "Variant.name": "VariantName.",
    "Variant.instance_type": "InstanceType, an ml.* type.",
    "Variant.initial_instance_count": "InitialInstanceCount.",
    "Variant.volume_size_gb": (
        "VolumeSizeInGB of the ML storage volume (EBS instance types only, not ml.g5, ml.m5d, ...); "
        "default: the instance type's."
    ),
    "Variant.model_data_download_timeout_seconds": "ModelDataDownloadTimeoutInSeconds; default: SageMaker's.",
    "Variant.container_startup_health_check_timeout_seconds": (
        "ContainerStartupHealthCheckTimeoutInSeconds: time for /ping to answer 200; default: SageMaker's."
    ),
    "Variant.autoscaling": "Instance-count autoscaling of this variant.",
    "Autoscaling.min_capacity": "Minimum instance count (0 only for async).",
    "Autoscaling.max_capacity": "Maximum instance count.",
    "Autoscaling.target_invocations_per_instance": "SageMakerVariantInvocationsPerInstance target.",
    "Autoscaling.target_backlog_per_instance": "ApproximateBacklogSizePerInstance target (async).",
    "Autoscaling.scale_in_cooldown_seconds": "Seconds between scale-in activities.",
    "Autoscaling.scale_out_cooldown_seconds": "Seconds between scale-out activities.",
    "ServerlessSpec.variant_name": "VariantName of the single serverless variant.",
    "ServerlessSpec.memory_size_mb": "MemorySizeInMB.",
    "ServerlessSpec.max_concurrency": "MaxConcurrency: concurrent invocations.",
    "ServerlessSpec.provisioned_concurrency": "ProvisionedConcurrency (<= max_concurrency); none by default.",
    "ServerlessSpec.autoscaling": "Autoscaling of the provisioned concurrency.",
    "ServerlessAutoscaling.min_capacity": "Minimum provisioned concurrency.",
    "ServerlessAutoscaling.max_capacity": "Maximum provisioned concurrency.",
    "AsyncSpec.output_prefix": "S3OutputPath, a prefix in the endpoint's bucket.",
    "AsyncSpec.failure_prefix": "S3FailurePath, a prefix in the endpoint's bucket.",
    "AsyncSpec.max_concurrent_invocations_per_instance": "ClientConfig.MaxConcurrentInvocationsPerInstance.",
    "Deployment.strategy": "Blue/green traffic shifting: all at once, a canary, or linear steps.",
    "Deployment.canary_size_percent": "Canary share of the fleet (<= 50); canary only.",
    "Deployment.linear_step_percent": "Step share of the fleet (10-50); linear only.",
    "Deployment.wait_interval_seconds": "Baking time after each traffic shift.",
    "Deployment.termination_wait_seconds": "Time the old fleet is kept after the shift.",
    "Deployment.max_execution_timeout_seconds": "MaximumExecutionTimeoutInSeconds of the whole update.",
    "Deployment.auto_rollback": "Roll back when an alarm of the endpoint fires during the update.",
    "DataCapture.enabled": "Capture requests and responses.",
    "DataCapture.sampling_percentage": "InitialSamplingPercentage.",
    "DataCapture.capture": "CaptureOptions: input, output or both.",
    "DataCapture.prefix": "Prefix of the captured data in the endpoint's bucket.",
    "Security.kms": "KMS key of the storage volumes, captured data and async output.",
    "Security.vpc": "VpcConfig of the model containers; none by default.",
    "Kms.create": "Create a key (with rotation) for this deployment.",
    "Kms.key_arn": "Use this existing key instead.",
    "Vpc.subnet_ids": "Subnets of the containers' network interfaces.",
    "Vpc.security_group_ids": "Security groups of the containers' network interfaces.",
    "Monitoring.alarms": "Create the alarms (also used as auto-rollback alarms).",
    "Monitoring.latency_p99_ms": "ModelLatency p99 threshold of the latency alarm, in milliseconds.",
    "Monitoring.evaluation_periods": "Minutes an alarm condition must hold (at most 1440: AWS's one day for alarms "
    "of a period under an hour).",
    "PipelineSpec.region": "Region of the pipeline.",
    "PipelineSpec.source": "Where the pipeline reads the repository.",
    "PipelineSpec.staging": "The staging account and region.",
    "PipelineSpec.production": "The production account and region (must differ from staging).",
    "ConnectionSource.type": "connection: a repository behind a CodeConnections connection.",
    "ConnectionSource.connection_arn": "ARN of the CodeConnections (or CodeStar) connection.",
    "ConnectionSource.branch": "Branch the pipeline follows.",
    "CodeCommitSource.type": "codecommit: a CodeCommit repository.",
    "CodeCommitSource.repository": "Repository name.",
    "CodeCommitSource.branch": "Branch the pipeline follows.",
    "StageTarget.account": "12-digit account id.",
    "StageTarget.region": "Region such as eu-west-1.",
}


def models() -> list[type[BaseModel]]:
    """Every model of the config tree, root first (each once)."""
    found: list[type[BaseModel]] = []

    def nested(annotation: Any) -> Iterator[type[BaseModel]]:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield annotation
        for arg in typing.get_args(annotation):
            yield from nested(arg)

    def walk(model: type[BaseModel]) -> None:
        if model in found:
            return
        found.append(model)
        for field in model.model_fields.values():
            for child in nested(field.annotation):
                walk(child)

    walk(DeploymentConfig)
    return found


def _default(field: FieldInfo) -> str | None:
    if field.default_factory is not None:
        value = field.default_factory()  # type: ignore[call-arg]
        if isinstance(value, BaseModel):
            return "the section's own defaults"
    elif field.default is PydanticUndefined:
        return None
    else:
        value = field.default
    if value is None or value in ({}, [], ()):
        return "none"
    return json.dumps(list(value) if isinstance(value, tuple) else value)


def describe(model: type[BaseModel], name: str, field: FieldInfo) -> str:
    """A field's full description: what it is, its default (when not required), the AWS page."""
    text = field.description or FIELD_DOCS.get(f"{model.__name__}.{name}")
    if not text:
        raise KeyError(f"{model.__name__}.{name} has no description; add one (Field(description=...))")
    text = text.rstrip()
    if not text.endswith((".", ")")):
        text += "."
    default = _default(field)
    if default is not None and "Default:" not in text:
        text += f" Default: {default}."
    # Descriptions written with their own AWS link keep it; the others get their section's page.
    return text if _LINK.search(text) else f"{text} {AWS_DOCS[model.__name__]}"


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a deployment config file, every property described."""
    schema = DeploymentConfig.model_json_schema(by_alias=True)
    definitions = schema.get("$defs", {})
    for model in models():
        node = schema if model is DeploymentConfig else definitions[model.__name__]
        node["description"] = (
            f"{(model.__doc__ or model.__name__).strip().splitlines()[0]} {AWS_DOCS[model.__name__]}"
        )
        for name, field in model.model_fields.items():
            key = field.alias or name
            node["properties"][key]["description"] = describe(model, name, field)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def render() -> str:
    """``config/schema.json``'s exact text."""
    return json.dumps(json_schema(), indent=2, sort_keys=False) + "\n"


def write(path: str | Path) -> Path:
    """Write the schema to ``path``."""
    target = Path(path)
    target.write_text(render(), encoding="utf-8")
    return target
