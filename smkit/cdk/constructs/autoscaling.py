"""Application Auto Scaling of one production variant or one inference component (docs/cloudformation.md).

https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling.html

What :class:`ScalingSettings` tracks (:class:`ScalingTarget`):

- ``INVOCATIONS_PER_INSTANCE``: target tracking on ``SageMakerVariantInvocationsPerInstance`` (instance
  variants).
- ``BACKLOG_PER_INSTANCE``: target tracking on ``ApproximateBacklogSizePerInstance`` plus a step policy that
  scales out from zero on ``HasBacklogWithoutCapacity`` (async only; the documented scale-to-zero recipe,
  https://docs.aws.amazon.com/sagemaker/latest/dg/async-inference-autoscale.html).
- ``PROVISIONED_CONCURRENCY``: target tracking on ``SageMakerVariantProvisionedConcurrencyUtilization``
  (serverless, ``sagemaker:variant:DesiredProvisionedConcurrency``).
- ``INVOCATIONS_PER_COPY``: an inference component's copies (``inference-component/<name>``,
  ``sagemaker:inference-component:DesiredCopyCount``), target tracking on
  ``SageMakerInferenceComponentInvocationsPerCopy``, which scales in to ``min_capacity`` (0 included) but cannot
  scale out of zero (there is no copy to divide by); with ``min_capacity`` 0, a step policy (ChangeInCapacity
  +1, MetricAggregationType Maximum) fired by a CloudWatch alarm on ``NoCapacityInvocationFailures``, the
  metric SageMaker emits when a request finds no copy, as the AWS scale-to-zero guide sets it up
  (https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-zero-instances.html). The guide's
  example alarm uses ``GreaterThanThreshold`` 1, which needs two failed requests in a minute; this alarm
  fires on the first (``>= 1``), so a single caller's retry finds a starting copy.

Burstable ``ml.t2``/``ml.t3`` instances cannot autoscale and are refused (``ml.trn*`` can).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from constructs import Construct

from smkit.aws.instances import is_burstable
from smkit.cdk.constructs.cloudwatch_metrics import sagemaker_metric
from smkit.cdk.constructs.endpoint_config import InstanceType

# Application Auto Scaling acts on SageMaker variants through this service-linked role (created on first use);
# without it CDK would create an unused IAM role per target.
# https://docs.aws.amazon.com/autoscaling/application/userguide/application-auto-scaling-service-linked-roles.html
SERVICE_LINKED_ROLE = (
    "aws-service-role/sagemaker.application-autoscaling.amazonaws.com/"
    "AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint"
)
NO_CAPACITY = "NoCapacityInvocationFailures"


class ScalingTarget(enum.Enum):
    """What a scaling policy tracks, and so what it scales (instances, provisioned concurrency or copies)."""

    INVOCATIONS_PER_INSTANCE = "invocations"
    BACKLOG_PER_INSTANCE = "backlog"
    PROVISIONED_CONCURRENCY = "provisioned-concurrency"
    INVOCATIONS_PER_COPY = "invocations-per-copy"

    @property
    def dimension(self) -> str:
        """The scalable dimension."""
        return {
            ScalingTarget.PROVISIONED_CONCURRENCY: "sagemaker:variant:DesiredProvisionedConcurrency",
            ScalingTarget.INVOCATIONS_PER_COPY: "sagemaker:inference-component:DesiredCopyCount",
        }.get(self, "sagemaker:variant:DesiredInstanceCount")

    @property
    def of_component(self) -> bool:
        """Whether it scales an inference component (else a variant)."""
        return self is ScalingTarget.INVOCATIONS_PER_COPY


# The predefined target-tracking metric of each target and its policy's construct id (backlog: custom metric).
PREDEFINED = {
    ScalingTarget.INVOCATIONS_PER_INSTANCE: (
        "InvocationsPerInstance",
        appscaling.PredefinedMetric.SAGEMAKER_VARIANT_INVOCATIONS_PER_INSTANCE,
    ),
    ScalingTarget.PROVISIONED_CONCURRENCY: (
        "ProvisionedConcurrencyUtilization",
        appscaling.PredefinedMetric.SAGEMAKER_VARIANT_PROVISIONED_CONCURRENCY_UTILIZATION,
    ),
    ScalingTarget.INVOCATIONS_PER_COPY: (
        "InvocationsPerCopy",
        appscaling.PredefinedMetric.SAGEMAKER_INFERENCE_COMPONENT_INVOCATIONS_PER_COPY,
    ),
}


@dataclass(frozen=True)
class ScalingSettings:
    """Bounds, target and cooldowns of one scaling policy.

    Cooldowns left out: scale in 5 minutes; scale out 1 minute (a variant) or 5 minutes (copies); scale from
    zero 1 minute (copies; an async variant's step out of zero uses ``scale_out_cooldown``)."""

    kind: ScalingTarget
    min_capacity: int
    max_capacity: int
    target_value: float
    scale_in_cooldown: cdk.Duration | None = None
    scale_out_cooldown: cdk.Duration | None = None
    scale_from_zero_cooldown: cdk.Duration | None = None

    @property
    def scale_in(self) -> cdk.Duration:
        return self.scale_in_cooldown or cdk.Duration.seconds(300)

    @property
    def scale_out(self) -> cdk.Duration:
        default = 300 if self.kind.of_component else 60
        return self.scale_out_cooldown or cdk.Duration.seconds(default)

    @property
    def scale_from_zero(self) -> cdk.Duration:
        return self.scale_from_zero_cooldown or cdk.Duration.seconds(60)


class EndpointAutoscaling(Construct):
    """A scalable target on one variant (``variant_name`` of ``endpoint_name``) or one inference component
    (``component_name``), its target-tracking policy, and the step out of zero where there is one."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        settings: ScalingSettings,
        endpoint_name: str | None = None,
        variant_name: str | None = None,
        component_name: str | None = None,
        instance_type: InstanceType | None = None,
    ) -> None:
        super().__init__(scope, id_)
        s = settings
        if s.kind.of_component:
            if component_name is None:
                raise ValueError(
                    f"{self.node.path}: kind={s.kind.name} scales an inference component: give component_name"
                )
            resource_id = f"inference-component/{component_name}"
            _validate(f"inference component {component_name!r}", s, instance_type)
        else:
            if endpoint_name is None or variant_name is None:
                raise ValueError(
                    f"{self.node.path}: kind={s.kind.name} scales a variant: give endpoint_name and variant_name"
                )
            resource_id = f"endpoint/{endpoint_name}/variant/{variant_name}"
            _validate(f"variant {variant_name!r}", s, instance_type)
        self.target = appscaling.ScalableTarget(
            self,
            "Target",
            service_namespace=appscaling.ServiceNamespace.SAGEMAKER,
            scalable_dimension=s.kind.dimension,
            resource_id=resource_id,
            min_capacity=s.min_capacity,
            max_capacity=s.max_capacity,
            role=iam.Role.from_role_arn(
                self,
                "ServiceLinkedRole",
                cdk.Stack.of(self).format_arn(
                    service="iam", region="", resource="role", resource_name=SERVICE_LINKED_ROLE
                ),
                mutable=False,
            ),
        )
        self.scale_from_zero_alarm: cloudwatch.Alarm | None = None
        if s.kind in PREDEFINED:
            policy_id, predefined = PREDEFINED[s.kind]
            self.target.scale_to_track_metric(
                policy_id,
                target_value=s.target_value,
                predefined_metric=predefined,
                scale_in_cooldown=s.scale_in,
                scale_out_cooldown=s.scale_out,
            )
        if s.kind is ScalingTarget.BACKLOG_PER_INSTANCE:
            assert endpoint_name is not None
            self._scale_on_backlog(endpoint_name, s)
        if s.kind.of_component and s.min_capacity == 0:
            assert component_name is not None
            self._scale_from_zero(component_name, s)

    def _scale_on_backlog(self, endpoint_name: str, s: ScalingSettings) -> None:
        """An async endpoint's backlog per instance tracked, and one instance more when requests wait with
        none (``HasBacklogWithoutCapacity``)."""
        self.target.scale_to_track_metric(
            "BacklogPerInstance",
            target_value=s.target_value,
            custom_metric=sagemaker_metric(
                "ApproximateBacklogSizePerInstance", {"EndpointName": endpoint_name}, statistic="Average"
            ),
            scale_in_cooldown=s.scale_in,
            scale_out_cooldown=s.scale_out,
        )
        self.target.scale_on_metric(
            "ScaleOutFromZero",
            metric=sagemaker_metric(
                "HasBacklogWithoutCapacity", {"EndpointName": endpoint_name}, statistic="Average"
            ),
            scaling_steps=[
                appscaling.ScalingInterval(upper=0.5, change=0),
                appscaling.ScalingInterval(lower=0.5, change=1),
            ],
            adjustment_type=appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
            cooldown=s.scale_out,
            evaluation_periods=2,
        )

    def _scale_from_zero(self, component_name: str, s: ScalingSettings) -> None:
        """One copy more when a request found none (``NoCapacityInvocationFailures`` >= 1 in a minute)."""
        action = appscaling.StepScalingAction(
            self,
            "ScaleFromZero",
            scaling_target=self.target,
            adjustment_type=appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
            metric_aggregation_type=appscaling.MetricAggregationType.MAXIMUM,
            cooldown=s.scale_from_zero,
        )
        action.add_adjustment(adjustment=1, lower_bound=0)
        self.scale_from_zero_alarm = cloudwatch.Alarm(
            self,
            "NoCapacityAlarm",
            metric=sagemaker_metric(NO_CAPACITY, {"InferenceComponentName": component_name}),
            threshold=1,
            evaluation_periods=1,
            datapoints_to_alarm=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=f"Inference component {component_name} was invoked with no copy: add one",
        )
        self.scale_from_zero_alarm.add_alarm_action(cw_actions.ApplicationScalingAction(action))


def _validate(what: str, s: ScalingSettings, instance_type: InstanceType | None) -> None:
    problems = []
    if not isinstance(s.kind, ScalingTarget):
        problems.append(f"kind={s.kind!r} (one of {[k.name for k in ScalingTarget]})")
    if instance_type is not None and is_burstable(instance_type.name):
        problems.append(f"instance_type={instance_type.name!r}: burstable ml.t* instances cannot autoscale")
    floor = 0 if s.kind in (ScalingTarget.BACKLOG_PER_INSTANCE, ScalingTarget.INVOCATIONS_PER_COPY) else 1
    if s.min_capacity < floor:
        problems.append(f"min_capacity={s.min_capacity} (must be >= {floor}; only async scales to zero)")
    if s.max_capacity < max(s.min_capacity, 1):
        problems.append(f"max_capacity={s.max_capacity} (must be >= min_capacity and >= 1)")
    if s.target_value <= 0:
        problems.append(f"target_value={s.target_value} (must be > 0)")
    if problems:
        raise ValueError(f"Invalid autoscaling for {what}: " + "; ".join(problems))
