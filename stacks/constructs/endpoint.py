"""AWS::SageMaker::Endpoint with deployment guardrails, auto-rollback and retained variant properties.

https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-sagemaker-endpoint.html
https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-blue-green.html
"""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

TRAFFIC_ROUTING = {"all-at-once": "ALL_AT_ONCE", "canary": "CANARY", "linear": "LINEAR"}
INVOKE_ACTIONS = ["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointAsync"]
# VariantPropertyType values taken from the new EndpointConfig even with RetainAllVariantProperties.
NOT_RETAINED = ("DesiredWeight", "DataCaptureConfig")
MAX_NAME = 63  # EndpointName pattern ^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}


@dataclass(frozen=True)
class DeploymentGuardrails:
    """Blue/green traffic shifting (``strategy`` all-at-once | canary | linear) and its timings."""

    strategy: str = "all-at-once"
    canary_size_percent: int | None = None
    linear_step_percent: int | None = None
    wait_interval_seconds: int = 300
    termination_wait_seconds: int = 0
    max_execution_timeout_seconds: int | None = None
    auto_rollback: bool = True


class InferenceEndpoint(Construct):
    """The endpoint. Updates of its config are blue/green; autoscaled instance counts survive updates
    while variant weights and data capture follow the new config.

    The endpoint's name is derived from its construct path (unique per stack and stage, stable across
    updates) rather than left to CloudFormation: the rollback alarms watch metrics dimensioned by the
    name, and the endpoint lists those alarms, so a CloudFormation-generated name would be a cycle. The
    Endpoint is updated in place on every config or model change, so a stable name never blocks a
    replacement; Model and EndpointConfig names stay generated.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        endpoint_config_name: str,
        deployment: DeploymentGuardrails,
    ) -> None:
        super().__init__(scope, id_)
        if deployment.strategy not in TRAFFIC_ROUTING:
            raise ValueError(
                f"Invalid deployment strategy {deployment.strategy!r} (one of {sorted(TRAFFIC_ROUTING)})"
            )
        self.endpoint_name = cdk.Names.unique_resource_name(self, max_length=MAX_NAME, separator="-")
        self._deployment = deployment
        self._rollback_alarms: list[cloudwatch.IAlarm] = []
        self.resource = sagemaker.CfnEndpoint(
            self,
            "Resource",
            endpoint_name=self.endpoint_name,
            endpoint_config_name=endpoint_config_name,
            # Keep the autoscaled instance count across updates, but let weight and capture changes apply.
            retain_all_variant_properties=True,
            exclude_retained_variant_properties=[
                sagemaker.CfnEndpoint.VariantPropertyProperty(variant_property_type=t) for t in NOT_RETAINED
            ],
            deployment_config=self._deployment_config(),
        )

    def add_rollback_alarms(self, *alarms: cloudwatch.IAlarm) -> None:
        """Roll a blue/green update back when any of ``alarms`` fires (if auto-rollback is on)."""
        self._rollback_alarms.extend(alarms)
        self.resource.deployment_config = self._deployment_config()

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow ``grantee`` to call InvokeEndpoint / InvokeEndpointAsync on this endpoint only."""
        return iam.Grant.add_to_principal(
            grantee=grantee, actions=INVOKE_ACTIONS, resource_arns=[self.endpoint_arn]
        )

    @property
    def endpoint_arn(self) -> str:
        """ARN of the endpoint."""
        return cdk.Stack.of(self).format_arn(
            service="sagemaker", resource="endpoint", resource_name=self.endpoint_name.lower()
        )

    def metric(
        self, metric_name: str, *, variant_name: str | None = None, statistic: str = "Sum"
    ) -> cloudwatch.Metric:
        """A one-minute ``AWS/SageMaker`` metric of this endpoint (and variant, if given)."""
        dimensions = {"EndpointName": self.endpoint_name}
        if variant_name is not None:
            dimensions["VariantName"] = variant_name
        return cloudwatch.Metric(
            namespace="AWS/SageMaker",
            metric_name=metric_name,
            dimensions_map=dimensions,
            statistic=statistic,
            period=cdk.Duration.minutes(1),
        )

    def _deployment_config(self) -> sagemaker.CfnEndpoint.DeploymentConfigProperty:
        d = self._deployment
        routing = TRAFFIC_ROUTING[d.strategy]
        rollback = None
        if d.auto_rollback and self._rollback_alarms:
            rollback = sagemaker.CfnEndpoint.AutoRollbackConfigProperty(
                alarms=[
                    sagemaker.CfnEndpoint.AlarmProperty(alarm_name=a.alarm_name)
                    for a in self._rollback_alarms
                ]
            )
        return sagemaker.CfnEndpoint.DeploymentConfigProperty(
            blue_green_update_policy=sagemaker.CfnEndpoint.BlueGreenUpdatePolicyProperty(
                traffic_routing_configuration=sagemaker.CfnEndpoint.TrafficRoutingConfigProperty(
                    type=routing,
                    canary_size=_capacity(d.canary_size_percent) if routing == "CANARY" else None,
                    linear_step_size=_capacity(d.linear_step_percent) if routing == "LINEAR" else None,
                    wait_interval_in_seconds=d.wait_interval_seconds,
                ),
                termination_wait_in_seconds=d.termination_wait_seconds,
                maximum_execution_timeout_in_seconds=d.max_execution_timeout_seconds,
            ),
            auto_rollback_configuration=rollback,
        )


def _capacity(percent: int | None) -> sagemaker.CfnEndpoint.CapacitySizeProperty:
    if percent is None:
        raise ValueError("canary and linear deployments need a traffic percentage")
    return sagemaker.CfnEndpoint.CapacitySizeProperty(type="CAPACITY_PERCENT", value=percent)
