"""The serving stack: model artifacts, image, execution role, Model, EndpointConfig, Endpoint,
autoscaling, logs and monitoring for one resolved deployment (:mod:`smkit.config.resolved`).

Stateful resources and their pinned construct paths (logical ids are checked by
``tests/stacks/test_logical_ids.py``): ``EncryptionKey/Key``, ``Storage/Bucket``, ``Storage/AccessLogs``,
``Endpoint/Resource``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ecr as ecr
from constructs import Construct

from smkit.cdk import mapping
from smkit.cdk.component_parts import add_inference_components
from smkit.cdk.constructs.encryption import EncryptionKey
from smkit.cdk.constructs.endpoint import InferenceEndpoint
from smkit.cdk.constructs.endpoint_config import EndpointConfiguration, InstanceType, InstanceVariant
from smkit.cdk.constructs.execution_role import ExecutionRole, grant_vpc_access
from smkit.cdk.constructs.logical_ids import pascal
from smkit.cdk.constructs.logs import DeploymentLogs, retention_period
from smkit.cdk.constructs.model import ContainerSpec, InferenceModel
from smkit.cdk.constructs.model_data import as_channel, grant_read_s3
from smkit.cdk.constructs.monitoring import EndpointMonitoring
from smkit.cdk.constructs.notifications import AsyncTopics
from smkit.cdk.constructs.storage import EndpointBucket
from smkit.config.day2 import DeployedEndpoint, plan_update
from smkit.config.model_data_rules import previous_s3_reads
from smkit.config.resolved import ResolvedDeployment
from smkit.config.resolved.names import ENDPOINT_ID
from smkit.config.rules import ASYNC_INPUT_PREFIX

# AWS Config's managed rule on production variants of one instance.
PROD_INSTANCE_COUNT_URL = "https://docs.aws.amazon.com/config/latest/developerguide/sagemaker-endpoint-config-prod-instance-count.html"


class ServingStack(cdk.Stack):
    """Everything one SageMaker endpoint needs, built from ``deployment``.

    ``deployment``: what the config means on SageMaker (:func:`smkit.config.load_deployment`, or
    :func:`smkit.config.resolved.resolve` of a config); the stack decides none of it again. ``repository``
    is the ECR repository of :class:`smkit.cdk.ecr_stack.EcrStack` (used by ``image.source: ecr``).

    ``previous_s3_uris``: model data and adapter weights in S3 that recorded releases ran (``smkit deploy``
    passes them from the release history, :func:`smkit.release.history.previous_s3_uris`). The execution role
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
        deployment: ResolvedDeployment,
        repository: ecr.IRepository | None,
        previous_s3_uris: Sequence[str] = (),
        deployed: DeployedEndpoint | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id_, **kwargs)
        self.deployed = deployed
        d = self.deployment = deployment
        self._shared(d)
        specs = self._containers(d, repository)
        vpc = mapping.network(self, d)
        self._keep_previous_data(d, previous_s3_uris)
        if d.components is not None:
            self._components(d, specs, vpc)
        else:
            self._variants(d, specs, vpc)

    def _shared(self, d: ResolvedDeployment) -> None:
        """What either kind of endpoint uses: the key, the bucket, the execution role, the async
        notification topics and the log groups."""
        self.encryption = EncryptionKey(self, "EncryptionKey", key_arn=d.kms.key_arn)
        key = self.encryption.key
        self.storage = EndpointBucket(
            self,
            "Storage",
            encryption_key=key,
            expire_after={p: cdk.Duration.days(n) for p, n in d.storage.expire_days.items()},
            noncurrent_version_expiration=cdk.Duration.days(d.storage.noncurrent_version_days),
            superseded_model_expiration=cdk.Duration.days(d.storage.superseded_model_days),
        )
        self.execution_role = ExecutionRole(self, "ExecutionRole")
        self.encryption.grant_use(self.execution_role)
        self.async_topics = None
        if d.asynchronous is not None and d.asynchronous.notifications:
            self.async_topics = AsyncTopics(self, "Async", encryption_key=key)
            self.async_topics.grant_publish(self.execution_role)
        self.logs = DeploymentLogs(
            self,
            "Logs",
            retention=retention_period(d.monitoring.log_retention_days),
            encryption_key=key,
        )

    def _variants(self, d: ResolvedDeployment, specs: dict[str, ContainerSpec], vpc: mapping.Network) -> None:
        """An endpoint of production variants (instances or serverless, real-time or async) and shadow
        variants: its model, endpoint config, endpoint, alarms, autoscaling and outputs."""
        self.async_settings = mapping.async_settings(
            d,
            self.storage,
            success_topic=self.async_topics.success.topic_arn if self.async_topics else None,
            error_topic=self.async_topics.error.topic_arn if self.async_topics else None,
        )
        self.endpoint_config = EndpointConfiguration(
            self,
            "EndpointConfig",
            model=self._model(specs, vpc),
            key=self.encryption.key,
            variants=mapping.instance_variants(d, self.storage),
            shadow_variants=self._shadow_variants(specs, vpc),
            serverless=mapping.serverless_variant(d),
            data_capture=mapping.data_capture(d, self.storage),
            async_inference=self.async_settings,
            metrics=mapping.metrics_settings(d),
        )
        if d.asynchronous is not None:
            self.storage.grant_read(self.execution_role, ASYNC_INPUT_PREFIX)
        if prefixes := [p for p in d.written_prefixes if p != ASYNC_INPUT_PREFIX]:
            self.storage.grant_write(self.execution_role, prefixes)
        self.endpoint = InferenceEndpoint(
            self,
            ENDPOINT_ID,
            endpoint_config=self.endpoint_config,
            deployment=mapping.guardrails(d),
            kind=d.endpoint_kind,
            retain_variant_properties=d.retains_instance_counts,
        )
        # SageMaker would create the endpoint's log group on first use, without retention or key.
        self.endpoint.resource.node.add_dependency(self.logs.add_endpoint_group(self.endpoint.endpoint_name))
        self.logs.grant_write(self.execution_role)
        self.monitoring = self._monitoring(d) if d.monitoring.alarms else None
        self._autoscaling(d)
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
        self._warn_unsubscribed(d)
        self._warn_single_instance(d)
        self._plan_update(d)

    def _containers(
        self, deployment: ResolvedDeployment, repository: ecr.IRepository | None
    ) -> dict[str, ContainerSpec]:
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
                f"ModelData{pascal(c.name)}",
                grantee=role,
                bucket=self.storage.bucket,
                log_group=self.logs.helpers,
            )
            channels = [
                as_channel(
                    ch.name,
                    mapping.channel_data(ch).bind(
                        self,
                        f"Channel{pascal(c.name)}{pascal(ch.name.replace('.', '-'))}",
                        grantee=role,
                        bucket=self.storage.bucket,
                        log_group=self.logs.helpers,
                    ),
                )
                for ch in c.channels
            ]
            specs[c.name] = ContainerSpec(
                images[c.image.key], bound, dict(c.environment), c.hostname, channels
            )
        if deployment.vpc is not None:
            grant_vpc_access(
                role,
                subnet_ids=deployment.vpc.subnet_ids,
                security_group_ids=deployment.vpc.security_group_ids,
            )
        return specs

    def _keep_previous_data(self, deployment: ResolvedDeployment, previous: Sequence[str]) -> None:
        """Read grants on earlier releases' S3 data that the current config no longer names."""
        for i, (uri, prefix) in enumerate(previous_s3_reads(deployment.s3_data_uris, previous)):
            grant_read_s3(self, self.execution_role, f"Release{i}", uri, prefix=prefix)

    def _model(self, specs: dict[str, ContainerSpec], vpc: mapping.Network) -> InferenceModel:
        """The Model of the production variants."""
        self.model = InferenceModel(
            self,
            "Model",
            role=self.execution_role.role,
            containers=[specs[c.name] for c in self.deployment.production_containers],
            inference_mode=self.deployment.inference_mode,
            network_isolation=self.deployment.network_isolation,
            log_group=self.logs.helpers,
            **vpc,
        )
        # CreateModel checks image and data access with the role: wait for its policies.
        self.model.resource.node.add_dependency(*self.execution_role.access_policies)
        return self.model

    def _shadow_variants(
        self, specs: dict[str, ContainerSpec], vpc: mapping.Network
    ) -> list[InstanceVariant]:
        """A shadow variant serves its own model (one container of model.containers)."""
        shadow_variants = []
        for shadow in self.deployment.shadow_variants:
            shadow_model = InferenceModel(
                self,
                f"ShadowModel{pascal(shadow.name)}",
                role=self.execution_role.role,
                containers=[specs[name] for name in shadow.containers],
                network_isolation=self.deployment.network_isolation,
                log_group=self.logs.helpers,
                **vpc,
            )
            shadow_model.resource.node.add_dependency(*self.execution_role.access_policies)
            shadow_variants.append(mapping.shadow_variant(shadow, model=shadow_model))
        return shadow_variants

    def _monitoring(self, deployment: ResolvedDeployment) -> EndpointMonitoring:
        """Alarms to people and to the deployment guardrails; the role may read the rollback alarms."""
        monitoring = EndpointMonitoring(
            self,
            "Monitoring",
            endpoint=self.endpoint,
            thresholds=mapping.thresholds(deployment),
            encryption_key=self.encryption.key,
            subscribers=mapping.subscribers(deployment),
            is_async=deployment.asynchronous is not None,
        )
        if deployment.guardrails.auto_rollback:
            self.endpoint.add_rollback_alarms(*monitoring.rollback_alarms)
            monitoring.grant_describe_rollback_alarms(
                self.execution_role.separate_policy("RollbackAlarms")
            ).apply_before(self.endpoint.resource)
        return monitoring

    def _autoscaling(self, deployment: ResolvedDeployment) -> None:
        for policy in deployment.scaling:
            self.endpoint.variant(policy.variant).scale(
                mapping.scaling_settings(policy),
                instance_type=InstanceType.of(policy.instance_type) if policy.instance_type else None,
                id_=f"Autoscaling{pascal(policy.variant)}",
            )

    def _plan_update(self, deployment: ResolvedDeployment) -> None:
        """Leave DeploymentConfig out of an update that changes the variant names (it would fail)."""
        types = {v.name: v.instance_type for v in (*deployment.variants, *deployment.shadow_variants)}
        self.update_plan = plan_update(
            self.deployed, deployment.variant_names, self.endpoint.endpoint_name, instance_types=types
        )
        if not self.update_plan.deployment_config:
            self.endpoint.resource.add_property_deletion_override("DeploymentConfig")
            cdk.Annotations.of(self).add_warning_v2(
                "smkit:update-without-deployment-config", self.update_plan.reason or ""
            )

    def _warn_unsubscribed(self, deployment: ResolvedDeployment) -> None:
        """Alarms whose topic nobody subscribes to reach nobody: say so in the synth output."""
        if deployment.monitoring.alarms and not deployment.monitoring.subscriptions:
            cdk.Annotations.of(self).add_warning_v2(
                "smkit:alarm-topic-without-subscriber",
                "the alarms publish to an SNS topic nobody subscribes to, so they reach nobody: add "
                "monitoring.subscriptions (e.g. [{type: email, address: oncall@example.com}]) or subscribe to "
                "the stack output AlarmTopicArn (aws sns subscribe --topic-arn ARN --protocol email "
                "--notification-endpoint ADDRESS)",
            )

    def _warn_single_instance(self, deployment: ResolvedDeployment) -> None:
        """``environment: prod`` with a production variant of one instance: say what AWS Config will report."""
        if deployment.environment != "prod" or deployment.endpoint_kind == "serverless":
            return
        single = [v.name for v in deployment.variants if v.initial_instance_count < 2]
        if single:
            cdk.Annotations.of(self).add_warning_v2(
                "smkit:prod-single-instance",
                f"environment: prod, but variant(s) {', '.join(single)} start with one instance: one instance is "
                "one Availability Zone, and AWS Config's managed rule sagemaker-endpoint-config-prod-instance-count "
                'reports this endpoint config NON_COMPLIANT (AWS: "The rule is NON_COMPLIANT if production '
                'variants InitialInstanceCount is equal to 1."); set initial_instance_count: 2 or more '
                f"({PROD_INSTANCE_COUNT_URL})",
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
        self, deployment: ResolvedDeployment, specs: dict[str, ContainerSpec], vpc: mapping.Network
    ) -> None:
        """An inference-component endpoint (smkit.cdk.component_parts); outputs name every component."""
        parts = add_inference_components(
            self,
            deployment=deployment,
            containers=specs,
            role=self.execution_role,
            encryption_key=self.encryption.key,
            vpc=vpc,
            logs=self.logs,
            storage=self.storage,
        )
        if deployment.written_prefixes:  # core dumps
            self.storage.grant_write(self.execution_role, deployment.written_prefixes)
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
        self._warn_unsubscribed(deployment)
        self._warn_single_instance(deployment)
        self._plan_update(deployment)
        self._outputs(
            parts.endpoint_config.variant_names,
            parts.monitoring,
            {"ComponentLogGroupNames": component_logs, "InferenceComponentNames": component_names},
        )
