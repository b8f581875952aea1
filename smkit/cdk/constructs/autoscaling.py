"""Application Auto Scaling of one production variant (docs/cloudformation.md).

https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-auto-scaling.html

- ``invocations``: target tracking on ``SageMakerVariantInvocationsPerInstance`` (instance variants).
- ``backlog``: target tracking on ``ApproximateBacklogSizePerInstance`` plus a step policy that scales out
  from zero on ``HasBacklogWithoutCapacity`` (async only; the documented scale-to-zero recipe,
  https://docs.aws.amazon.com/sagemaker/latest/dg/async-inference-autoscale.html).
- ``provisioned-concurrency``: target tracking on ``SageMakerVariantProvisionedConcurrencyUtilization``
  (serverless, ``sagemaker:variant:DesiredProvisionedConcurrency``).

Burstable ``ml.t2``/``ml.t3`` instances cannot autoscale and are refused (``ml.trn*`` can).
"""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from constructs import Construct

from smkit.config.aws_rules import BURSTABLE

# Application Auto Scaling acts on SageMaker variants through this service-linked role (created on first use);
# without it CDK would create an unused IAM role per target.
# https://docs.aws.amazon.com/autoscaling/application/userguide/application-auto-scaling-service-linked-roles.html
SERVICE_LINKED_ROLE = (
    "aws-service-role/sagemaker.application-autoscaling.amazonaws.com/"
    "AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint"
)
DIMENSIONS = {
    "invocations": "sagemaker:variant:DesiredInstanceCount",
    "backlog": "sagemaker:variant:DesiredInstanceCount",
    "provisioned-concurrency": "sagemaker:variant:DesiredProvisionedConcurrency",
}

PREDEFINED = {
    "invocations": appscaling.PredefinedMetric.SAGEMAKER_VARIANT_INVOCATIONS_PER_INSTANCE,
    "provisioned-concurrency": appscaling.PredefinedMetric.SAGEMAKER_VARIANT_PROVISIONED_CONCURRENCY_UTILIZATION,
}
POLICY_IDS = {
    "invocations": "InvocationsPerInstance",
    "provisioned-concurrency": "ProvisionedConcurrencyUtilization",
}


@dataclass(frozen=True)
class ScalingSettings:
    """Bounds and target of one variant's scaling policy."""

    kind: str
    min_capacity: int
    max_capacity: int
    target_value: float
    scale_in_cooldown_seconds: int = 300
    scale_out_cooldown_seconds: int = 60


class VariantAutoscaling(Construct):
    """A scalable target on one variant and its target-tracking policy."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        endpoint_name: str,
        variant_name: str,
        settings: ScalingSettings,
        instance_type: str | None = None,
    ) -> None:
        super().__init__(scope, id_)
        _validate(variant_name, settings, instance_type)
        s = settings
        self.target = appscaling.ScalableTarget(
            self,
            "Target",
            service_namespace=appscaling.ServiceNamespace.SAGEMAKER,
            scalable_dimension=DIMENSIONS[s.kind],
            resource_id=f"endpoint/{endpoint_name}/variant/{variant_name}",
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
        scale_in = cdk.Duration.seconds(s.scale_in_cooldown_seconds)
        scale_out = cdk.Duration.seconds(s.scale_out_cooldown_seconds)
        if s.kind in PREDEFINED:
            self.target.scale_to_track_metric(
                POLICY_IDS[s.kind],
                target_value=s.target_value,
                predefined_metric=PREDEFINED[s.kind],
                scale_in_cooldown=scale_in,
                scale_out_cooldown=scale_out,
            )
        else:
            self.target.scale_to_track_metric(
                "BacklogPerInstance",
                target_value=s.target_value,
                custom_metric=_endpoint_metric(endpoint_name, "ApproximateBacklogSizePerInstance", "Average"),
                scale_in_cooldown=scale_in,
                scale_out_cooldown=scale_out,
            )
            self.target.scale_on_metric(
                "ScaleOutFromZero",
                metric=_endpoint_metric(endpoint_name, "HasBacklogWithoutCapacity", "Average"),
                scaling_steps=[
                    appscaling.ScalingInterval(upper=0.5, change=0),
                    appscaling.ScalingInterval(lower=0.5, change=1),
                ],
                adjustment_type=appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
                cooldown=cdk.Duration.seconds(s.scale_out_cooldown_seconds),
                evaluation_periods=2,
            )


def _endpoint_metric(endpoint_name: str, metric_name: str, statistic: str) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace="AWS/SageMaker",
        metric_name=metric_name,
        dimensions_map={"EndpointName": endpoint_name},
        statistic=statistic,
        period=cdk.Duration.minutes(1),
    )


def _validate(variant_name: str, s: ScalingSettings, instance_type: str | None) -> None:
    problems = []
    if s.kind not in DIMENSIONS:
        problems.append(f"kind={s.kind!r} (one of {sorted(DIMENSIONS)})")
    if instance_type is not None and BURSTABLE.match(instance_type):
        problems.append(f"instance_type={instance_type!r}: burstable ml.t* instances cannot autoscale")
    floor = 0 if s.kind == "backlog" else 1
    if s.min_capacity < floor:
        problems.append(f"min_capacity={s.min_capacity} (must be >= {floor}; only async scales to zero)")
    if s.max_capacity < max(s.min_capacity, 1):
        problems.append(f"max_capacity={s.max_capacity} (must be >= min_capacity and >= 1)")
    if s.target_value <= 0:
        problems.append(f"target_value={s.target_value} (must be > 0)")
    if problems:
        raise ValueError(f"Invalid autoscaling for variant {variant_name!r}: " + "; ".join(problems))
