"""Alarms and dashboard of an inference-component endpoint: per component, on its InferenceComponentName.

Invocation metrics carry the ``InferenceComponentName`` dimension
(https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html); ``ModelLatency`` is in
microseconds. A component's 5XX-rate and latency alarms are its rolling update's auto-rollback alarms
(``rollback_alarms``); its 4XX-rate alarm only notifies (a caller's bad request is not the model's fault).
The topic (:class:`smkit.cdk.constructs.monitoring.AlarmTopic`: CloudWatch may publish, config subscribers)
and the dashboard mirror :class:`smkit.cdk.constructs.monitoring.EndpointMonitoring` (same construct ids,
so the topic's logical id is the pinned one).
"""

from __future__ import annotations

from collections.abc import Sequence

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_kms as kms
from constructs import Construct

from smkit.cdk.constructs.inference_component import InferenceComponent
from smkit.cdk.constructs.logical_ids import pin
from smkit.cdk.constructs.monitoring import MICROSECONDS_PER_MS, AlarmThresholds, AlarmTopic, Subscriber


class ComponentMonitoring(Construct):
    """5XX / 4XX / p99 latency alarms per component, their SNS topic, and a dashboard with copy counts."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        components: Sequence[tuple[str, InferenceComponent]],
        thresholds: AlarmThresholds,
        encryption_key: kms.IKey,
        subscribers: Sequence[Subscriber] = (),
    ) -> None:
        super().__init__(scope, id_)
        t = thresholds
        self.alarm_topic = AlarmTopic(
            self, "AlarmTopic", encryption_key=encryption_key, subscribers=subscribers
        )
        self.topic = self.alarm_topic.topic
        pin(self.topic, id_, "AlarmTopic", "Resource")
        self.alarms: dict[str, list[cloudwatch.Alarm]] = {}
        self.rollback_alarms: dict[str, list[cloudwatch.Alarm]] = {}
        dashboard = cloudwatch.Dashboard(self, "Dashboard")
        for name, component in components:
            errors5 = component.metric("Invocation5XXErrors")
            errors4 = component.metric("Invocation4XXErrors")
            latency = component.metric("ModelLatency", statistic="p99")
            invocations = component.metric("Invocations")
            no_capacity = component.metric("NoCapacityInvocationFailures")
            rate5, rate4 = _rate("5", errors5, invocations), _rate("4", errors4, invocations)
            alarms = []
            for suffix, metric, threshold, what in (
                (
                    "5xxRate",
                    rate5,
                    t.error_5xx_percent,
                    f">= {t.error_5xx_percent}% of requests fail with 5XX",
                ),
                (
                    "4xxRate",
                    rate4,
                    t.error_4xx_percent,
                    f">= {t.error_4xx_percent}% of requests rejected (4XX)",
                ),
                (
                    "LatencyP99",
                    latency,
                    t.latency_p99_ms * MICROSECONDS_PER_MS,
                    f"ModelLatency p99 >= {t.latency_p99_ms} ms",
                ),
            ):
                alarm = cloudwatch.Alarm(
                    self,
                    f"{name}{suffix}",
                    metric=metric,
                    threshold=threshold,
                    evaluation_periods=t.evaluation_periods,
                    comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                    treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                    alarm_description=f"Inference component {name} ({component.component_name}): {what}",
                )
                for action in self.alarm_topic.actions:
                    alarm.add_alarm_action(action)
                    alarm.add_ok_action(action)
                alarms.append(alarm)
            self.alarms[name] = alarms
            self.rollback_alarms[name] = [a for a in alarms if "4xx" not in a.node.id]
            dashboard.add_widgets(
                cloudwatch.GraphWidget(
                    title=f"{name}: invocations", left=[invocations, no_capacity], width=8
                ),
                cloudwatch.GraphWidget(title=f"{name}: error rates (%)", left=[rate4, rate5], width=8),
                cloudwatch.GraphWidget(title=f"{name}: ModelLatency p99 (us)", left=[latency], width=8),
            )
        every = [a for alarms in self.alarms.values() for a in alarms]
        dashboard.add_widgets(cloudwatch.AlarmStatusWidget(title="alarms", alarms=list(every), width=24))
        self.dashboard = dashboard


def _rate(kind: str, errors: cloudwatch.Metric, requests: cloudwatch.Metric) -> cloudwatch.MathExpression:
    """Errors as a percentage of requests (ids unique per graph: 4XX and 5XX are plotted together)."""
    e, r = f"e{kind}", f"r{kind}"
    return cloudwatch.MathExpression(
        expression=f"IF({r} > 0, 100 * {e} / {r}, 0)",
        using_metrics={e: errors, r: requests},
        label=f"{kind}XX % of requests",
        period=cdk.Duration.minutes(1),
    )
