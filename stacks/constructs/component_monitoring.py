"""Alarms and dashboard of an inference-component endpoint: per component, on its InferenceComponentName.

Invocation metrics carry the ``InferenceComponentName`` dimension
(https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html); ``ModelLatency`` is in
microseconds. Each component's alarms are its rolling update's auto-rollback alarms. The topic and
dashboard mirror :class:`stacks.constructs.monitoring.EndpointMonitoring` (same construct ids, so the
topic's logical id is the pinned one).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct

from stacks.constructs.inference_component import InferenceComponent
from stacks.constructs.monitoring import MICROSECONDS_PER_MS, AlarmThresholds


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
    ) -> None:
        super().__init__(scope, id_)
        t = thresholds
        self.topic = sns.Topic(self, "AlarmTopic", master_key=encryption_key, enforce_ssl=True)
        action = cw_actions.SnsAction(self.topic)
        self.alarms: dict[str, list[cloudwatch.Alarm]] = {}
        dashboard = cloudwatch.Dashboard(self, "Dashboard")
        for name, component in components:
            errors5 = component.metric("Invocation5XXErrors")
            errors4 = component.metric("Invocation4XXErrors")
            latency = component.metric("ModelLatency", statistic="p99")
            invocations = component.metric("Invocations")
            no_capacity = component.metric("NoCapacityInvocationFailures")
            alarms = []
            for suffix, metric, threshold, what in (
                ("5xxErrors", errors5, t.error_5xx, f">= {t.error_5xx} 5XX errors a minute"),
                ("4xxErrors", errors4, t.error_4xx, f">= {t.error_4xx} 4XX errors a minute"),
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
                alarm.add_alarm_action(action)
                alarm.add_ok_action(action)
                alarms.append(alarm)
            self.alarms[name] = alarms
            dashboard.add_widgets(
                cloudwatch.GraphWidget(
                    title=f"{name}: invocations", left=[invocations, no_capacity], width=8
                ),
                cloudwatch.GraphWidget(title=f"{name}: errors", left=[errors4, errors5], width=8),
                cloudwatch.GraphWidget(title=f"{name}: ModelLatency p99 (us)", left=[latency], width=8),
            )
        every = [a for alarms in self.alarms.values() for a in alarms]
        dashboard.add_widgets(cloudwatch.AlarmStatusWidget(title="alarms", alarms=list(every), width=24))
        self.dashboard = dashboard
