"""CloudWatch alarms (also the endpoint's auto-rollback alarms), their SNS topic, and a dashboard.

Metrics: https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html
(``ModelLatency`` is in microseconds; ``ApproximateAgeOfOldestRequest`` in seconds, async only).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct

from stacks.constructs.endpoint import InferenceEndpoint

MICROSECONDS_PER_MS = 1000


@dataclass(frozen=True)
class AlarmThresholds:
    """When the alarms fire; each must hold for ``evaluation_periods`` consecutive minutes."""

    latency_p99_ms: int
    error_5xx: int
    error_4xx: int
    backlog_age_seconds: int | None = None
    evaluation_periods: int = 3


class EndpointMonitoring(Construct):
    """Per-variant 5XX / 4XX / p99 latency alarms, an async backlog-age alarm, a topic and a dashboard.

    ``alarms`` are the endpoint's rollback alarms; a shadow variant's alarms (``shadow_alarms``) notify the
    same topic but never roll production back: its answers reach no caller.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        endpoint: InferenceEndpoint,
        variant_names: Sequence[str],
        thresholds: AlarmThresholds,
        encryption_key: kms.IKey,
        shadow_variant_names: Sequence[str] = (),
    ) -> None:
        super().__init__(scope, id_)
        t = thresholds
        self.topic = sns.Topic(self, "AlarmTopic", master_key=encryption_key, enforce_ssl=True)
        action = cw_actions.SnsAction(self.topic)
        self.alarms: list[cloudwatch.Alarm] = []
        self.shadow_alarms: list[cloudwatch.Alarm] = []
        dashboard = cloudwatch.Dashboard(self, "Dashboard")
        shadows = set(shadow_variant_names)

        def alarm(
            id_: str, metric: cloudwatch.IMetric, threshold: float, what: str, *, shadow: bool = False
        ) -> cloudwatch.Alarm:
            a = cloudwatch.Alarm(
                self,
                id_,
                metric=metric,
                threshold=threshold,
                evaluation_periods=t.evaluation_periods,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                alarm_description=f"{what} of endpoint {endpoint.endpoint_name}",
            )
            a.add_alarm_action(action)
            a.add_ok_action(action)
            (self.shadow_alarms if shadow else self.alarms).append(a)
            return a

        for v in [*variant_names, *shadow_variant_names]:
            errors5 = endpoint.metric("Invocation5XXErrors", variant_name=v)
            errors4 = endpoint.metric("Invocation4XXErrors", variant_name=v)
            latency = endpoint.metric("ModelLatency", variant_name=v, statistic="p99")
            invocations = endpoint.metric("Invocations", variant_name=v)
            shadow = v in shadows
            kind = "Shadow variant" if shadow else "Variant"
            alarm(
                f"{v}5xxErrors",
                errors5,
                t.error_5xx,
                f"{kind} {v}: >= {t.error_5xx} 5XX errors a minute",
                shadow=shadow,
            )
            alarm(
                f"{v}4xxErrors",
                errors4,
                t.error_4xx,
                f"{kind} {v}: >= {t.error_4xx} 4XX errors a minute",
                shadow=shadow,
            )
            alarm(
                f"{v}LatencyP99",
                latency,
                t.latency_p99_ms * MICROSECONDS_PER_MS,
                f"{kind} {v}: ModelLatency p99 >= {t.latency_p99_ms} ms",
                shadow=shadow,
            )
            dashboard.add_widgets(
                cloudwatch.GraphWidget(title=f"{v}: invocations", left=[invocations], width=8),
                cloudwatch.GraphWidget(title=f"{v}: errors", left=[errors4, errors5], width=8),
                cloudwatch.GraphWidget(title=f"{v}: ModelLatency p99 (us)", left=[latency], width=8),
            )
        if t.backlog_age_seconds is not None:
            age = endpoint.metric("ApproximateAgeOfOldestRequest", statistic="Maximum")
            backlog = endpoint.metric("ApproximateBacklogSize", statistic="Average")
            alarm(
                "BacklogAge",
                age,
                t.backlog_age_seconds,
                f"Oldest queued async request >= {t.backlog_age_seconds} s",
            )
            dashboard.add_widgets(
                cloudwatch.GraphWidget(title="async backlog", left=[backlog], right=[age], width=24),
            )
        dashboard.add_widgets(
            cloudwatch.AlarmStatusWidget(
                title="alarms", alarms=[*self.alarms, *self.shadow_alarms], width=24
            ),
        )
        self.dashboard = dashboard
