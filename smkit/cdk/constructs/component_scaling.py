"""Application Auto Scaling of one inference component's copies, down to and back up from zero.

As the AWS scale-to-zero guide sets it up
(https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling-zero-instances.html):

- a scalable target ``inference-component/<name>`` on ``sagemaker:inference-component:DesiredCopyCount``;
- target tracking on ``SageMakerInferenceComponentInvocationsPerCopy``, which scales in to ``min_copies``
  (0 included) but cannot scale out of zero (there is no copy to divide by);
- with ``min_copies: 0``, a step policy (ChangeInCapacity +1, MetricAggregationType Maximum) fired by a
  CloudWatch alarm on ``NoCapacityInvocationFailures``, the metric SageMaker emits when a request finds no
  copy. The guide's example alarm uses ``GreaterThanThreshold`` 1, which needs two failed requests in a
  minute; this alarm fires on the first (``>= 1``), so a single caller's retry finds a starting copy.
"""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from constructs import Construct

from smkit.cdk.constructs.autoscaling import SERVICE_LINKED_ROLE

DIMENSION = "sagemaker:inference-component:DesiredCopyCount"
NO_CAPACITY = "NoCapacityInvocationFailures"


@dataclass(frozen=True)
class CopyScalingSettings:
    """Bounds, target and cooldowns of one component's copy scaling."""

    min_copies: int
    max_copies: int
    target_invocations_per_copy: float
    scale_in_cooldown_seconds: int = 300
    scale_out_cooldown_seconds: int = 300
    scale_from_zero_cooldown_seconds: int = 60


class ComponentAutoscaling(Construct):
    """Scalable target, target tracking policy and (scaling to zero) the scale-from-zero policy and alarm."""

    def __init__(
        self, scope: Construct, id_: str, *, component_name: str, settings: CopyScalingSettings
    ) -> None:
        super().__init__(scope, id_)
        s = settings
        _validate(component_name, s)
        self.target = appscaling.ScalableTarget(
            self,
            "Target",
            service_namespace=appscaling.ServiceNamespace.SAGEMAKER,
            scalable_dimension=DIMENSION,
            resource_id=f"inference-component/{component_name}",
            min_capacity=s.min_copies,
            max_capacity=s.max_copies,
            role=iam.Role.from_role_arn(
                self,
                "ServiceLinkedRole",
                cdk.Stack.of(self).format_arn(
                    service="iam", region="", resource="role", resource_name=SERVICE_LINKED_ROLE
                ),
                mutable=False,
            ),
        )
        self.target.scale_to_track_metric(
            "InvocationsPerCopy",
            target_value=s.target_invocations_per_copy,
            predefined_metric=appscaling.PredefinedMetric.SAGEMAKER_INFERENCE_COMPONENT_INVOCATIONS_PER_COPY,
            scale_in_cooldown=cdk.Duration.seconds(s.scale_in_cooldown_seconds),
            scale_out_cooldown=cdk.Duration.seconds(s.scale_out_cooldown_seconds),
        )
        self.scale_from_zero_alarm: cloudwatch.Alarm | None = None
        if s.min_copies == 0:
            action = appscaling.StepScalingAction(
                self,
                "ScaleFromZero",
                scaling_target=self.target,
                adjustment_type=appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
                metric_aggregation_type=appscaling.MetricAggregationType.MAXIMUM,
                cooldown=cdk.Duration.seconds(s.scale_from_zero_cooldown_seconds),
            )
            action.add_adjustment(adjustment=1, lower_bound=0)
            self.scale_from_zero_alarm = cloudwatch.Alarm(
                self,
                "NoCapacityAlarm",
                metric=cloudwatch.Metric(
                    namespace="AWS/SageMaker",
                    metric_name=NO_CAPACITY,
                    dimensions_map={"InferenceComponentName": component_name},
                    statistic="Sum",
                    period=cdk.Duration.minutes(1),
                ),
                threshold=1,
                evaluation_periods=1,
                datapoints_to_alarm=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                alarm_description=f"Inference component {component_name} was invoked with no copy: add one",
            )
            self.scale_from_zero_alarm.add_alarm_action(cw_actions.ApplicationScalingAction(action))


def _validate(component_name: str, s: CopyScalingSettings) -> None:
    problems = []
    if s.min_copies < 0:
        problems.append(f"min_copies={s.min_copies} (must be >= 0)")
    if s.max_copies < max(s.min_copies, 1):
        problems.append(f"max_copies={s.max_copies} (must be >= min_copies and >= 1)")
    if s.target_invocations_per_copy <= 0:
        problems.append(f"target_invocations_per_copy={s.target_invocations_per_copy} (must be > 0)")
    if problems:
        raise ValueError(
            f"Invalid copy scaling for inference component {component_name!r}: " + "; ".join(problems)
        )
