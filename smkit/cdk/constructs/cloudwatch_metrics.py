"""``AWS/SageMaker`` CloudWatch metrics: what every metric of endpoints, variants, inference components and
their scaling is built with.

SageMaker publishes invocation metrics per variant every minute, with the dimensions ``EndpointName`` and
``VariantName`` (``InferenceComponentName`` for a component):
https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html#cloudwatch-metrics-endpoint-invocation
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict, Unpack

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch

from smkit.aws.limits import ALARM_PERIOD_S

NAMESPACE = "AWS/SageMaker"
# SageMaker's publishing interval for invocation metrics, a period CloudWatch alarms take (smkit.aws.limits).
DEFAULT_PERIOD = cdk.Duration.seconds(ALARM_PERIOD_S)


class MetricOptions(TypedDict, total=False):
    """Keyword arguments of every metric helper: those of ``aws_cloudwatch.MetricOptions`` (``statistic``:
    Sum, ``period``: one minute, by default)."""

    statistic: str
    period: cdk.Duration
    label: str
    unit: cloudwatch.Unit
    color: str
    account: str
    region: str


def sagemaker_metric(
    metric_name: str, dimensions: Mapping[str, str], **options: Unpack[MetricOptions]
) -> cloudwatch.Metric:
    """An ``AWS/SageMaker`` metric with ``dimensions`` (in that order), one minute by default: what every
    metric of endpoints, variants, inference components and their scaling is built with."""
    return cloudwatch.Metric(
        namespace=NAMESPACE,
        metric_name=metric_name,
        dimensions_map=dict(dimensions),
        statistic=options.get("statistic", "Sum"),
        period=options.get("period") or DEFAULT_PERIOD,
        label=options.get("label"),
        unit=options.get("unit"),
        color=options.get("color"),
        account=options.get("account"),
        region=options.get("region"),
    )
