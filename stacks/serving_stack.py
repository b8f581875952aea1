"""The serving stack: model artifacts, image, execution role, Model, EndpointConfig, Endpoint,
autoscaling and monitoring for one deployment config.

Stateful resources and their pinned construct paths (logical ids are checked by
``tests/stacks/test_logical_ids.py``): ``EncryptionKey/Key``, ``Storage/Bucket``, ``Storage/AccessLogs``,
``Endpoint/Resource``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_sns as sns
from constructs import Construct

from smkit.config import DeploymentConfig
from smkit.config.component_rules import production_containers
from stacks import mapping
from stacks.component_parts import add_inference_components
from stacks.constructs.autoscaling import VariantAutoscaling
from stacks.constructs.encryption import EncryptionKey
from stacks.constructs.endpoint import InferenceEndpoint
from stacks.constructs.endpoint_config import AsyncSettings, DataCaptureSettings, EndpointConfiguration
from stacks.constructs.execution_role import ExecutionRole, grant_vpc_access
from stacks.constructs.model import ContainerSpec, InferenceModel, VpcSettings
from stacks.constructs.monitoring import EndpointMonitoring
from stacks.constructs.storage import EndpointBucket

ASYNC_INPUT_PREFIX = "async/input"


class ServingStack(cdk.Stack):
    """Everything one SageMaker endpoint needs, built from ``config``.

    ``project_root`` resolves the config's relative paths (model data, Docker context); ``repository``
    is the ECR repository of :class:`stacks.ecr_stack.EcrStack` (used by ``image.source: ecr``).
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        config: DeploymentConfig,
        repository: ecr.IRepository,
        project_root: Path,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id_, **kwargs)
        cfg = config
        self.encryption = EncryptionKey(self, "EncryptionKey", key_arn=cfg.security.kms.key_arn)
        key = self.encryption.key
        self.storage = EndpointBucket(self, "Storage", encryption_key=key)
        bucket = self.storage.bucket
        self.execution_role = ExecutionRole(self, "ExecutionRole")
        self.execution_role.grant_key(key)
        role = self.execution_role

        images: dict[str, str] = {}
        specs: dict[str, ContainerSpec] = {}
        for c in cfg.model.containers:
            image_cfg = mapping.container_image(cfg, c)
            cache_key = image_cfg.model_dump_json()
            if cache_key not in images:
                source = mapping.image_source(image_cfg, repository=repository, project_root=project_root)
                images[cache_key] = source.bind(self, f"Image{len(images) or ''}", role=role)
            data = mapping.model_data(c.model_data, project_root=project_root)
            bound = data.bind(self, f"ModelData{mapping.pascal(c.name)}", role=role, bucket=bucket)
            env = dict(c.environment)
            specs[c.name] = ContainerSpec(images[cache_key], bound, env, c.hostname)

        vpc = mapping.vpc(cfg)
        if vpc is not None:
            grant_vpc_access(
                self.execution_role, subnet_ids=vpc.subnet_ids, security_group_ids=vpc.security_group_ids
            )
        if cfg.endpoint.type == "inference-components":
            self._components(cfg, specs, vpc)
            return
        self.model = InferenceModel(
            self,
            "Model",
            execution_role_arn=self.execution_role.role_arn,
            containers=[specs[c.name] for c in production_containers(cfg)],
            inference_mode=cfg.model.inference_mode,
            network_isolation=cfg.model.network_isolation,
            vpc=vpc,
        )
        # A shadow variant serves its own model (one container of model.containers).
        shadow_variants = []
        for shadow in cfg.endpoint.shadow_variants:
            shadow_model = InferenceModel(
                self,
                f"ShadowModel{mapping.pascal(shadow.name)}",
                execution_role_arn=self.execution_role.role_arn,
                containers=[specs[shadow.container]],
                network_isolation=cfg.model.network_isolation,
                vpc=vpc,
            )
            shadow_model.resource.node.add_dependency(self.execution_role.policy)
            shadow_variants.append(mapping.shadow_variant(cfg, shadow, model_name=shadow_model.model_name))

        data_capture = None
        capture = cfg.endpoint.data_capture
        prefixes: list[str] = []
        if capture is not None and capture.enabled:
            prefixes.append(capture.prefix)
            data_capture = DataCaptureSettings(
                destination_s3_uri=self.storage.s3_uri(capture.prefix),
                sampling_percentage=capture.sampling_percentage,
                capture=capture.capture,
            )
        async_settings = None
        self.async_topics: list[sns.Topic] = []
        if cfg.endpoint.type == "async" and cfg.endpoint.async_ is not None:
            a = cfg.endpoint.async_
            prefixes += [a.output_prefix, a.failure_prefix]
            self.execution_role.grant_read(bucket, ASYNC_INPUT_PREFIX)
            if a.notifications:
                self.async_topics = [
                    sns.Topic(self, name, master_key=key, enforce_ssl=True)
                    for name in ("AsyncSuccess", "AsyncError")
                ]
                self.execution_role.grant_publish(self.async_topics)
            async_settings = AsyncSettings(
                output_s3_uri=self.storage.s3_uri(a.output_prefix),
                failure_s3_uri=self.storage.s3_uri(a.failure_prefix),
                success_topic_arn=self.async_topics[0].topic_arn if self.async_topics else None,
                error_topic_arn=self.async_topics[1].topic_arn if self.async_topics else None,
                max_concurrent_invocations_per_instance=a.max_concurrent_invocations_per_instance,
            )
        if prefixes:
            self.execution_role.grant_write(bucket, prefixes)
        # CreateModel checks image and data access with the role: wait for its policy.
        self.model.resource.node.add_dependency(self.execution_role.policy)

        self.endpoint_config = EndpointConfiguration(
            self,
            "EndpointConfig",
            model_name=self.model.model_name,
            kms_key_arn=self.encryption.key_arn,
            variants=mapping.instance_variants(cfg),
            serverless=mapping.serverless_variant(cfg),
            data_capture=data_capture,
            async_inference=async_settings,
            shadow_variants=shadow_variants,
        )
        self.endpoint = InferenceEndpoint(
            self,
            "Endpoint",
            endpoint_config_name=self.endpoint_config.endpoint_config_name,
            deployment=mapping.guardrails(cfg),
        )
        variant_names = self.endpoint_config.variant_names
        self.monitoring = None
        if cfg.monitoring.alarms:
            self.monitoring = EndpointMonitoring(
                self,
                "Monitoring",
                endpoint=self.endpoint,
                variant_names=variant_names,
                thresholds=mapping.thresholds(cfg),
                encryption_key=key,
                shadow_variant_names=self.endpoint_config.shadow_variant_names,
            )
            self.endpoint.add_rollback_alarms(*self.monitoring.alarms)

        for variant, instance_type, settings in mapping.scaling(cfg):
            VariantAutoscaling(
                self,
                f"Autoscaling{mapping.pascal(variant)}",
                endpoint_name=self.endpoint.resource.attr_endpoint_name,
                variant_name=variant,
                settings=settings,
                instance_type=instance_type,
            )

        outputs = self._common_outputs(variant_names)
        if self.monitoring is not None:
            outputs["AlarmTopicArn"] = self.monitoring.topic.topic_arn
            outputs["DashboardName"] = self.monitoring.dashboard.dashboard_name
        if shadow_variants:
            outputs["ShadowVariantNames"] = ",".join(self.endpoint_config.shadow_variant_names)
        if async_settings is not None:
            outputs["AsyncInputUri"] = self.storage.s3_uri(ASYNC_INPUT_PREFIX)
            outputs["AsyncOutputUri"] = async_settings.output_s3_uri
        for name, value in outputs.items():
            cdk.CfnOutput(self, name, value=value)

    def _common_outputs(self, variant_names: list[str]) -> dict[str, str]:
        return {
            "EndpointName": self.endpoint.resource.attr_endpoint_name,
            "ExecutionRoleArn": self.execution_role.role_arn,
            "BucketName": self.storage.bucket.bucket_name,
            "VariantNames": ",".join(variant_names),
            "KmsKeyArn": self.encryption.key_arn,
        }

    def _components(
        self, cfg: DeploymentConfig, specs: dict[str, ContainerSpec], vpc: VpcSettings | None
    ) -> None:
        """An inference-component endpoint (stacks.component_parts); outputs name every component."""
        parts = add_inference_components(
            self,
            cfg=cfg,
            containers=specs,
            role=self.execution_role,
            kms_key_arn=self.encryption.key_arn,
            encryption_key=self.encryption.key,
            vpc=vpc,
        )
        self.endpoint = parts.endpoint
        self.components = parts.components
        outputs = self._common_outputs(parts.endpoint_config.variant_names)
        # The deployed InferenceComponentName of each config component, in config order: name=physical name.
        outputs["InferenceComponentNames"] = ",".join(
            f"{name}={component.component_name}" for name, component in parts.components.items()
        )
        if parts.monitoring is not None:
            outputs["AlarmTopicArn"] = parts.monitoring.topic.topic_arn
            outputs["DashboardName"] = parts.monitoring.dashboard.dashboard_name
        for name, value in outputs.items():
            cdk.CfnOutput(self, name, value=value)
