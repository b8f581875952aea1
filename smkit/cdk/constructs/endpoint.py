"""AWS::SageMaker::Endpoint with deployment guardrails, auto-rollback and retained variant properties.

https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-sagemaker-endpoint.html
https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-blue-green.html
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from smkit.aws.limits import MAX_NAME_LENGTH
from smkit.cdk.constructs.endpoint_config import ConfigEnum, IEndpointConfig
from smkit.cdk.constructs.endpoint_config import seconds_of as _seconds
from smkit.cdk.constructs.endpoint_interface import (
    EndpointMetrics,
    ImportedEndpoint,
    endpoint_arn_of,
    grant_invoke,
)

# VariantPropertyType values taken from the new EndpointConfig even with RetainAllVariantProperties.
NOT_RETAINED = ("DesiredWeight", "DataCaptureConfig")


class DeploymentStrategy(ConfigEnum):
    """How an update reaches the fleet: blue/green traffic shifting (TrafficRoutingConfig.Type ALL_AT_ONCE,
    CANARY, LINEAR) or a rolling update (RollingUpdatePolicy).
    https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails.html"""

    ALL_AT_ONCE = "ALL_AT_ONCE"
    CANARY = "CANARY"
    LINEAR = "LINEAR"
    ROLLING = "ROLLING"


class CapacityUnit(ConfigEnum):
    """CapacitySize.Type: a number of instances or a percentage of the fleet."""

    INSTANCE_COUNT = "INSTANCE_COUNT"
    CAPACITY_PERCENT = "CAPACITY_PERCENT"


@dataclass(frozen=True)
class BatchSize:
    """CapacitySize of a rolling update: ``unit`` and its value."""

    unit: CapacityUnit
    value: int


@dataclass(frozen=True)
class DeploymentGuardrails:
    """Blue/green traffic shifting (``strategy`` ALL_AT_ONCE, CANARY or LINEAR) or a rolling update
    (``ROLLING``, batch by batch: https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-rolling.html),
    and their timings."""

    strategy: DeploymentStrategy = DeploymentStrategy.ALL_AT_ONCE
    canary_size_percent: int | None = None
    linear_step_percent: int | None = None
    batch: BatchSize | None = None
    rollback_batch: BatchSize | None = None
    wait_interval: cdk.Duration = cdk.Duration.minutes(5)
    termination_wait: cdk.Duration = cdk.Duration.seconds(0)
    max_execution_timeout: cdk.Duration | None = None
    auto_rollback: bool = True


class InferenceEndpoint(EndpointMetrics, cdk.Resource):
    """The endpoint running ``endpoint_config`` (an :class:`EndpointConfiguration` of this app, or one named by
    ``EndpointConfiguration.from_endpoint_config_name``). Updates of its config are blue/green; autoscaled instance counts survive updates
    while variant weights and data capture follow the new config.

    The endpoint's name is derived from its construct path (unique per stack and stage, stable across
    updates) rather than left to CloudFormation: the rollback alarms watch metrics dimensioned by the
    name, and the endpoint lists those alarms, so a CloudFormation-generated name would be a cycle.

    ``kind`` (see :func:`smkit.cdk.mapping.endpoint_kind`) is part of the name when it is not ``None``: SageMaker
    cannot turn an instance-based endpoint into a serverless one, and the opposite update cannot be rolled
    back (https://docs.aws.amazon.com/sagemaker/latest/dg/serverless-endpoints.html, feature exclusions),
    so a change of kind gives the endpoint a new name: CloudFormation creates the new endpoint, then deletes
    the old one. Every other change, an autoscaled variant's new instance type included, is an in-place
    update under the same name (the deploy step deregisters and re-registers the variant's scalable target
    around it, smkit.release.instance_type_change).

    ``retain_variant_properties``: keep each variant's current instance count across updates (true when
    the variants autoscale, otherwise a changed ``initial_instance_count`` would be ignored). Weights and
    data capture always follow the new config.

    ``variant_names``: the endpoint config's variant names, so that the metric helpers
    (``metric_invocations``, ``metric_model_latency``, ``metric_invocation_5xx_errors``, ...) of an endpoint
    with one variant need no ``variant_name``, and ``variant(name)`` gives one variant's metrics and
    ``auto_scale_instance_count``. :meth:`from_endpoint_name` and :meth:`from_endpoint_arn` name an endpoint
    this app does not create, with the same ``grant_invoke``, metric helpers and variants.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        endpoint_config: IEndpointConfig,
        deployment: DeploymentGuardrails | None = None,
        kind: str | None = None,
        retain_variant_properties: bool = True,
    ) -> None:
        super().__init__(scope, id_)
        self.endpoint_config = endpoint_config
        self.variant_names = tuple(endpoint_config.variant_names)
        self.shadow_variant_names = tuple(endpoint_config.shadow_variant_names)
        deployment = deployment or DeploymentGuardrails()
        if (deployment.strategy is DeploymentStrategy.ROLLING) != (deployment.batch is not None):
            raise ValueError(
                "Invalid deployment: a rolling update, and only a rolling update, needs a batch size"
            )
        if kind:
            base = cdk.Names.unique_resource_name(
                self, max_length=MAX_NAME_LENGTH - len(kind) - 1, separator="-"
            )
            self.endpoint_name = f"{base}-{kind}"
        else:
            self.endpoint_name = cdk.Names.unique_resource_name(
                self, max_length=MAX_NAME_LENGTH, separator="-"
            )
        self._deployment = deployment or DeploymentGuardrails()
        self._rollback_alarms: list[cloudwatch.IAlarm] = []
        self.resource = sagemaker.CfnEndpoint(
            self,
            "Resource",
            endpoint_name=self.endpoint_name,
            endpoint_config_name=endpoint_config.endpoint_config_name,
            retain_all_variant_properties=retain_variant_properties,
            exclude_retained_variant_properties=(
                [sagemaker.CfnEndpoint.VariantPropertyProperty(variant_property_type=t) for t in NOT_RETAINED]
                if retain_variant_properties
                else None
            ),
            deployment_config=self._deployment_config(),
        )

    @staticmethod
    def from_endpoint_name(
        scope: Construct, id_: str, endpoint_name: str, *, variant_names: Sequence[str] = ()
    ) -> ImportedEndpoint:
        """An endpoint deployed elsewhere, by its EndpointName: ``grant_invoke``, the metric helpers and
        ``variant(name)`` (``variant_names``: its variants, so that a single one needs no ``variant_name``)."""
        return ImportedEndpoint(scope, id_, endpoint_name=endpoint_name, variant_names=variant_names)

    @staticmethod
    def from_endpoint_arn(
        scope: Construct, id_: str, endpoint_arn: str, *, variant_names: Sequence[str] = ()
    ) -> ImportedEndpoint:
        """An endpoint deployed elsewhere, by its ARN (its account and region are the ARN's). SageMaker writes
        the name lower-cased in the ARN, and the metrics' ``EndpointName`` is the name as created: for an
        endpoint whose name has capitals, use :meth:`from_endpoint_name`."""
        return ImportedEndpoint(scope, id_, endpoint_arn=endpoint_arn, variant_names=variant_names)

    @property
    def name_reference(self) -> str:
        """The endpoint's name as a reference to the resource: a scalable target is registered once it exists."""
        return self.resource.attr_endpoint_name

    def add_rollback_alarms(self, *alarms: cloudwatch.IAlarm) -> None:
        """Roll a blue/green update back when any of ``alarms`` fires (if auto-rollback is on)."""
        self._rollback_alarms.extend(alarms)
        self.resource.deployment_config = self._deployment_config()

    def grant_invoke(self, grantee: iam.IGrantable, *, with_bearer_token: bool = False) -> iam.Grant:
        """Allow ``grantee`` to call InvokeEndpoint / InvokeEndpointAsync on this endpoint only.

        ``with_bearer_token``: also ``sagemaker:CallWithBearerToken``, which the OpenAI-compatible route
        (``/endpoints/<name>/openai/v1``) needs (:func:`smkit.cdk.constructs.endpoint_interface.grant_invoke`).
        """
        return grant_invoke(grantee, self.endpoint_arn, with_bearer_token=with_bearer_token)

    @property
    def endpoint_arn(self) -> str:
        """ARN of the endpoint."""
        return endpoint_arn_of(self, self.endpoint_name)

    def _deployment_config(self) -> sagemaker.CfnEndpoint.DeploymentConfigProperty:
        d = self._deployment
        rollback = None
        if d.auto_rollback and self._rollback_alarms:
            rollback = sagemaker.CfnEndpoint.AutoRollbackConfigProperty(
                alarms=[
                    sagemaker.CfnEndpoint.AlarmProperty(alarm_name=a.alarm_name)
                    for a in self._rollback_alarms
                ]
            )
        if d.batch is not None:
            return sagemaker.CfnEndpoint.DeploymentConfigProperty(
                rolling_update_policy=sagemaker.CfnEndpoint.RollingUpdatePolicyProperty(
                    maximum_batch_size=_size(d.batch),
                    wait_interval_in_seconds=int(d.wait_interval.to_seconds()),
                    maximum_execution_timeout_in_seconds=_seconds(d.max_execution_timeout),
                    rollback_maximum_batch_size=_size(d.rollback_batch) if d.rollback_batch else None,
                ),
                auto_rollback_configuration=rollback,
            )
        routing = d.strategy.value
        return sagemaker.CfnEndpoint.DeploymentConfigProperty(
            blue_green_update_policy=sagemaker.CfnEndpoint.BlueGreenUpdatePolicyProperty(
                traffic_routing_configuration=sagemaker.CfnEndpoint.TrafficRoutingConfigProperty(
                    type=routing,
                    canary_size=_capacity(d.canary_size_percent) if routing == "CANARY" else None,
                    linear_step_size=_capacity(d.linear_step_percent) if routing == "LINEAR" else None,
                    wait_interval_in_seconds=int(d.wait_interval.to_seconds()),
                ),
                termination_wait_in_seconds=int(d.termination_wait.to_seconds()),
                maximum_execution_timeout_in_seconds=_seconds(d.max_execution_timeout),
            ),
            auto_rollback_configuration=rollback,
        )


def _capacity(percent: int | None) -> sagemaker.CfnEndpoint.CapacitySizeProperty:
    if percent is None:
        raise ValueError("canary and linear deployments need a traffic percentage")
    return sagemaker.CfnEndpoint.CapacitySizeProperty(type="CAPACITY_PERCENT", value=percent)


def _size(batch: BatchSize) -> sagemaker.CfnEndpoint.CapacitySizeProperty:
    return sagemaker.CfnEndpoint.CapacitySizeProperty(type=batch.unit.value, value=batch.value)
