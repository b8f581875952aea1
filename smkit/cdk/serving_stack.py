"""The serving stack: model artifacts, image, execution role, Model, EndpointConfig, Endpoint,
autoscaling, logs and monitoring for one deployment config.

Stateful resources and their pinned construct paths (logical ids are checked by
``tests/stacks/test_logical_ids.py``): ``EncryptionKey/Key``, ``Storage/Bucket``, ``Storage/AccessLogs``,
``Endpoint/Resource``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ecr as ecr
from constructs import Construct

from smkit.cdk import mapping
from smkit.cdk.component_parts import add_inference_components
from smkit.cdk.constructs.autoscaling import EndpointAutoscaling
from smkit.cdk.constructs.encryption import EncryptionKey
from smkit.cdk.constructs.endpoint import InferenceEndpoint
from smkit.cdk.constructs.endpoint_config import EndpointConfiguration, InstanceVariant
from smkit.cdk.constructs.execution_role import ExecutionRole, grant_vpc_access
from smkit.cdk.constructs.logs import DeploymentLogs, retention_period
from smkit.cdk.constructs.model import ContainerSpec, InferenceModel, VpcSettings
from smkit.cdk.constructs.model_data import grant_read_s3
from smkit.cdk.constructs.monitoring import EndpointMonitoring
from smkit.cdk.constructs.notifications import AsyncTopics
from smkit.cdk.constructs.storage import EndpointBucket
from smkit.config import DeploymentConfig
from smkit.config.day2 import DeployedEndpoint, plan_update
from smkit.config.model_data_rules import previous_s3_reads
from smkit.config.resolved import ResolvedDeployment, deployment_of
from smkit.config.rules import ASYNC_INPUT_PREFIX, written_prefixes


class ServingStack(cdk.Stack):
    """Everything one SageMaker endpoint needs, built from ``config``.

    ``project_root`` resolves the relative paths of a config built from data (a loaded config's paths are
    absolute: :func:`smkit.config.resolved.deployment_of`); ``repository``
    is the ECR repository of :class:`smkit.cdk.ecr_stack.EcrStack` (used by ``image.source: ecr``).

    ``previous_s3_uris``: model data and adapter weights in S3 that recorded releases ran (``smkit deploy``
    passes them from the release history, :func:`smkit.release.records.previous_s3_uris`). The execution role
    keeps reading them beside the current ones: during a blue/green or rolling update the old fleet still
    serves and scales out, and an auto-rollback starts it again, each reading its own data. Copies in the
    stack's own bucket are covered by the models/ grant of :mod:`smkit.cdk.constructs.model_copy`.

    ``deployed``: the endpoint SageMaker runs now (``smkit deploy`` reads it); an update that changes its
    variant names is sent without DeploymentConfig, with the reason as a synth warning
    (:func:`smkit.config.day2.plan_update`).
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        config: DeploymentConfig,
        repository: ecr.IRepository | None,
        project_root: Path,
        previous_s3_uris: Sequence[str] = (),
        deployed: DeployedEndpoint | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id_, **kwargs)
        self.deployed = deployed
        cfg = self.config = config
        self.deployment = deployment_of(config, project_root)
        self.encryption = EncryptionKey(self, "EncryptionKey", key_arn=cfg.security.kms.key_arn)
        key = self.encryption.key
        self.storage = EndpointBucket(
            self,
            "Storage",
            encryption_key=key,
            expire_after={p: cdk.Duration.days(d) for p, d in cfg.storage.expire_days.items()},
            noncurrent_version_expiration=cdk.Duration.days(cfg.storage.noncurrent_version_days),
            superseded_model_expiration=cdk.Duration.days(cfg.storage.superseded_model_days),
        )
        self.execution_role = ExecutionRole(self, "ExecutionRole")
        self.encryption.grant_use(self.execution_role)
        self.async_topics = None
        if cfg.endpoint.async_ is not None and cfg.endpoint.async_.notifications:
            self.async_topics = AsyncTopics(self, "Async", encryption_key=key)
            self.async_topics.grant_publish(self.execution_role)
        self.logs = DeploymentLogs(
            self,
            "Logs",
            retention=retention_period(cfg.monitoring.log_retention_days),
            encryption_key=key,
        )
        specs, vpc = self._containers(self.deployment, repository)
        self._keep_previous_data(cfg, previous_s3_uris)
        if cfg.endpoint.type == "inference-components":
            self._components(cfg, specs, vpc)
            return
        self.async_settings = mapping.async_settings(
            cfg,
            self.storage,
            success_topic=self.async_topics.success.topic_arn if self.async_topics else None,
            error_topic=self.async_topics.error.topic_arn if self.async_topics else None,
        )
        self.endpoint_config = EndpointConfiguration(
            self,
            "EndpointConfig",
            model_name=self._model(cfg, specs, vpc).model_name,
            kms_key_arn=self.encryption.key_arn,
            variants=mapping.instance_variants(cfg),
            shadow_variants=self._shadow_variants(cfg, specs, vpc),
            serverless=mapping.serverless_variant(cfg),
            data_capture=mapping.data_capture(cfg, self.storage),
            async_inference=self.async_settings,
        )
        if cfg.endpoint.type == "async":
            self.storage.grant_read(self.execution_role, ASYNC_INPUT_PREFIX)
        if prefixes := [p for p in written_prefixes(cfg) if p != ASYNC_INPUT_PREFIX]:
            self.storage.grant_write(self.execution_role, prefixes)
        self.endpoint = InferenceEndpoint(
            self,
            "Endpoint",
            endpoint_config_name=self.endpoint_config.endpoint_config_name,
            deployment=mapping.guardrails(cfg),
            kind=mapping.endpoint_kind(cfg),
            retain_variant_properties=mapping.retain_variant_properties(cfg),
        )
        # SageMaker would create the endpoint's log group on first use, without retention or key.
        self.endpoint.resource.node.add_dependency(self.logs.add_endpoint_group(self.endpoint.endpoint_name))
        self.logs.grant_write(self.execution_role)
        self.monitoring = self._monitoring(cfg) if cfg.monitoring.alarms else None
        self._autoscaling(cfg)
        shadows = self.endpoint_config.shadow_variant_names
        self._outputs(
            self.endpoint_config.variant_names,
            self.monitoring,
            {"ShadowVariantNames": ",".join(shadows)} if shadows else {},
            {
                "AsyncInputUri": self.storage.s3_uri(ASYNC_INPUT_PREFIX),
                "AsyncOutputUri": self.async_settings.output_s3_uri,
            }
            if self.async_settings is not None
            else None,
        )
        self._warn_unsubscribed(cfg)
        self._plan_update(cfg)

    def _containers(
        self, deployment: ResolvedDeployment, repository: ecr.IRepository | None
    ) -> tuple[dict[str, ContainerSpec], VpcSettings | None]:
        """Each container's image and model data (bound with the role's grants), by container name."""
        role = self.execution_role
        images: dict[str, str] = {}
        specs: dict[str, ContainerSpec] = {}
        for c in deployment.containers:
            if c.image.key not in images:
                source = mapping.image_source(c.image, repository=repository)
                images[c.image.key] = source.bind(self, f"Image{len(images) or ''}", grantee=role)
            bound = mapping.model_data(c.model_data).bind(
                self,
                f"ModelData{mapping.pascal(c.name)}",
                grantee=role,
                bucket=self.storage.bucket,
                log_group=self.logs.helpers,
            )
            specs[c.name] = ContainerSpec(images[c.image.key], bound, dict(c.environment), c.hostname)
        vpc = mapping.vpc(self.config)
        if vpc is not None:
            grant_vpc_access(role, subnet_ids=vpc.subnet_ids, security_group_ids=vpc.security_group_ids)
        return specs, vpc

    def _keep_previous_data(self, cfg: DeploymentConfig, previous: Sequence[str]) -> None:
        """Read grants on earlier releases' S3 data that the current config no longer names."""
        for i, (uri, prefix) in enumerate(previous_s3_reads(cfg, previous)):
            grant_read_s3(self, self.execution_role, f"Release{i}", uri, prefix=prefix)

    def _model(
        self, cfg: DeploymentConfig, specs: dict[str, ContainerSpec], vpc: VpcSettings | None
    ) -> InferenceModel:
        """The Model of the production variants."""
        self.model = InferenceModel(
            self,
            "Model",
            execution_role_arn=self.execution_role.role_arn,
            containers=[specs[c.name] for c in self.deployment.production_containers],
            inference_mode=self.deployment.inference_mode,
            network_isolation=self.deployment.network_isolation,
            vpc=vpc,
        )
        # CreateModel checks image and data access with the role: wait for its policies.
        self.model.resource.node.add_dependency(*self.execution_role.access_policies)
        return self.model

    def _shadow_variants(
        self, cfg: DeploymentConfig, specs: dict[str, ContainerSpec], vpc: VpcSettings | None
    ) -> list[InstanceVariant]:
        """A shadow variant serves its own model (one container of model.containers)."""
        shadow_variants = []
        for shadow, resolved in zip(
            cfg.endpoint.shadow_variants, self.deployment.shadow_variants, strict=True
        ):
            shadow_model = InferenceModel(
                self,
                f"ShadowModel{mapping.pascal(shadow.name)}",
                execution_role_arn=self.execution_role.role_arn,
                containers=[specs[shadow.container]],
                network_isolation=self.deployment.network_isolation,
                vpc=vpc,
            )
            shadow_model.resource.node.add_dependency(*self.execution_role.access_policies)
            shadow_variants.append(
                mapping.shadow_variant(shadow, resolved, model_name=shadow_model.model_name)
            )
        return shadow_variants

    def _monitoring(self, cfg: DeploymentConfig) -> EndpointMonitoring:
        """Alarms to people and to the deployment guardrails; the role may read the rollback alarms."""
        monitoring = EndpointMonitoring(
            self,
            "Monitoring",
            endpoint=self.endpoint,
            endpoint_config_name=self.endpoint_config.endpoint_config_name,
            variant_names=self.endpoint_config.variant_names,
            thresholds=mapping.thresholds(cfg),
            encryption_key=self.encryption.key,
            subscribers=mapping.subscribers(cfg),
            is_async=cfg.endpoint.type == "async",
            shadow_variant_names=self.endpoint_config.shadow_variant_names,
        )
        if cfg.endpoint.deployment.auto_rollback:
            self.endpoint.add_rollback_alarms(*monitoring.rollback_alarms)
            monitoring.grant_describe_rollback_alarms(
                self.execution_role.separate_policy("RollbackAlarms")
            ).apply_before(self.endpoint.resource)
        return monitoring

    def _autoscaling(self, cfg: DeploymentConfig) -> None:
        for variant, instance_type, settings in mapping.scaling(cfg):
            EndpointAutoscaling(
                self,
                f"Autoscaling{mapping.pascal(variant)}",
                endpoint_name=self.endpoint.resource.attr_endpoint_name,
                variant_name=variant,
                settings=settings,
                instance_type=instance_type,
            )

    def _plan_update(self, cfg: DeploymentConfig) -> None:
        """Leave DeploymentConfig out of an update that changes the variant names (it would fail)."""
        self.update_plan = plan_update(self.deployed, cfg, self.endpoint.endpoint_name)
        if not self.update_plan.deployment_config:
            self.endpoint.resource.add_property_deletion_override("DeploymentConfig")
            cdk.Annotations.of(self).add_warning_v2(
                "smkit:update-without-deployment-config", self.update_plan.reason or ""
            )

    def _warn_unsubscribed(self, cfg: DeploymentConfig) -> None:
        """Alarms whose topic nobody subscribes to reach nobody: say so in the synth output."""
        if cfg.monitoring.alarms and not cfg.monitoring.subscriptions:
            cdk.Annotations.of(self).add_warning_v2(
                "smkit:alarm-topic-without-subscriber",
                "the alarms publish to an SNS topic nobody subscribes to, so they reach nobody: add "
                "monitoring.subscriptions (e.g. [{type: email, address: oncall@example.com}]) or subscribe to "
                "the stack output AlarmTopicArn (aws sns subscribe --topic-arn ARN --protocol email "
                "--notification-endpoint ADDRESS)",
            )

    def _outputs(
        self,
        variant_names: Sequence[str],
        monitoring: EndpointMonitoring | None,
        extra: dict[str, str],
        trailing: dict[str, str] | None = None,
    ) -> None:
        """The stack's outputs, written here only, for either kind of endpoint: the common ones, ``extra``
        (shadow variants, components), the alarm topic and dashboard, then ``trailing`` (async locations)."""
        outputs = {
            "EndpointName": self.endpoint.resource.attr_endpoint_name,
            "ExecutionRoleArn": self.execution_role.role_arn,
            "BucketName": self.storage.bucket.bucket_name,
            "VariantNames": ",".join(variant_names),
            "KmsKeyArn": self.encryption.key_arn,
            "LogGroupName": self.logs.endpoint_group_name,
            **extra,
        }
        if monitoring is not None:
            outputs["AlarmTopicArn"] = monitoring.topic.topic_arn
            outputs["DashboardName"] = monitoring.dashboard.dashboard_name
        for name, value in {**outputs, **(trailing or {})}.items():
            cdk.CfnOutput(self, name, value=value)

    def _components(
        self, cfg: DeploymentConfig, specs: dict[str, ContainerSpec], vpc: VpcSettings | None
    ) -> None:
        """An inference-component endpoint (smkit.cdk.component_parts); outputs name every component."""
        parts = add_inference_components(
            self,
            cfg=cfg,
            deployment=self.deployment,
            containers=specs,
            role=self.execution_role,
            kms_key_arn=self.encryption.key_arn,
            encryption_key=self.encryption.key,
            vpc=vpc,
            logs=self.logs,
        )
        self.endpoint = parts.endpoint
        self.components = parts.components
        self.endpoint.resource.node.add_dependency(self.logs.add_endpoint_group(self.endpoint.endpoint_name))
        self.logs.grant_write(self.execution_role)
        # Where each base component's containers log (adapters log in their base's): name=log group.
        component_logs = ",".join(
            f"{name}={self.logs.components[component.component_name].log_group_name}"
            for name, component in parts.components.items()
            if component.component_name in self.logs.components
        )
        # The deployed InferenceComponentName of each config component, in config order: name=physical name.
        component_names = ",".join(
            f"{name}={component.component_name}" for name, component in parts.components.items()
        )
        self._warn_unsubscribed(cfg)
        self._plan_update(cfg)
        self._outputs(
            parts.endpoint_config.variant_names,
            parts.monitoring,
            {"ComponentLogGroupNames": component_logs, "InferenceComponentNames": component_names},
        )
