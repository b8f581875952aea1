"""``AWS/SageMaker`` CloudWatch metrics: what every metric of endpoints, variants, inference components and
their scaling is built with.

SageMaker publishes invocation metrics per variant every minute, with the dimensions ``EndpointName`` and
``VariantName`` (``InferenceComponentName`` for a component):
https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html#cloudwatch-metrics-endpoint-invocation
"""

from __future__ import annotations

from collections.abc import Mapping

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch

from smkit.aws.limits import ALARM_PERIOD_S

NAMESPACE = "AWS/SageMaker"
DEFAULT_PERIOD = cdk.Duration.seconds(
    ALARM_PERIOD_S
)  # SageMaker's publishing interval for invocation metrics


def sagemaker_metric(
    metric_name: str,
    dimensions: Mapping[str, str],
    *,
    statistic: str = "Sum",
    period: cdk.Duration | None = None,
    label: str | None = None,
    unit: cloudwatch.Unit | None = None,
    color: str | None = None,
    account: str | None = None,
    region: str | None = None,
) -> cloudwatch.Metric:
    """An ``AWS/SageMaker`` metric with ``dimensions`` (in that order), one minute by default: what every
    metric of endpoints, variants, inference components and their scaling is built with."""
    return cloudwatch.Metric(
        namespace=NAMESPACE,
        metric_name=metric_name,
        dimensions_map=dict(dimensions),
        statistic=statistic,
        period=period or DEFAULT_PERIOD,
        label=label,
        unit=unit,
        color=color,
        account=account,
        region=region,
    )
