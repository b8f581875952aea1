"""CloudWatch alarms, the SNS topic that carries them to people, the auto-rollback alarms, and a dashboard.

Metrics: https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html
(``ModelLatency`` is in microseconds; ``ApproximateAgeOfOldestRequest`` in seconds, async only; async
endpoints publish ``InvocationsProcessed`` instead of ``Invocations``,
https://docs.aws.amazon.com/sagemaker/latest/dg/async-inference-monitor.html).

Two sets of alarms:

- **Operational** (to the topic, so to whoever subscribed): per variant, 5XX and 4XX error rates and p99
  ModelLatency over the whole variant; async: age of the oldest queued request.
- **Rollback** (to the endpoint's AutoRollbackConfiguration): per variant, 5XX error rate and p99
  ModelLatency of the *new* fleet only: the metrics carry the new ``EndpointConfigName`` dimension, so an
  incident on the old fleet does not roll back the deployment that fixes it, and client errors (4XX)
  never roll back a good model.
  https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-configuration.html

A shadow variant gets the operational alarms (``shadow_alarms``, same topic) and no rollback alarms: its
answers reach no caller, so it never rolls production back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from smkit.cdk.constructs.endpoint import InferenceEndpoint
from smkit.cdk.constructs.logical_ids import pin

MICROSECONDS_PER_MS = 1000


@dataclass(frozen=True)
class AlarmThresholds:
    """When the alarms fire; each must hold for ``evaluation_periods`` consecutive minutes."""

    latency_p99_ms: int
    error_5xx_percent: float
    error_4xx_percent: float
    backlog_age_seconds: int | None = None
    evaluation_periods: int = 3


@dataclass(frozen=True)
class Subscriber:
    """Who gets the alarm topic: ``kind`` email | https | sns, and the address, URL or topic ARN."""

    kind: str
    target: str


class AlarmTopic(Construct):
    """The SNS topic alarms publish to: KMS-encrypted, TLS-only, CloudWatch allowed to publish.

    ``enforce_ssl`` writes a TopicPolicy, which replaces SNS's default policy; without the statement for
    ``cloudwatch.amazonaws.com`` no alarm could ever publish.
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html
    """

    def __init__(
        self, scope: Construct, id_: str, *, encryption_key: kms.IKey, subscribers: Sequence[Subscriber] = ()
    ) -> None:
        super().__init__(scope, id_)
        stack = cdk.Stack.of(self)
        self.topic = sns.Topic(self, "Topic", master_key=encryption_key, enforce_ssl=True)
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={
                    "ArnLike": {
                        "aws:SourceArn": stack.format_arn(
                            service="cloudwatch",
                            resource="alarm",
                            resource_name="*",
                            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
                        )
                    },
                    "StringEquals": {"aws:SourceAccount": stack.account},
                },
            )
        )
        self.actions: list[cloudwatch.IAlarmAction] = [cw_actions.SnsAction(self.topic)]
        for i, s in enumerate(subscribers):
            if s.kind == "email":
                self.topic.add_subscription(subscriptions.EmailSubscription(s.target))
            elif s.kind == "https":
                self.topic.add_subscription(subscriptions.UrlSubscription(s.target))
            elif s.kind == "sns":
                other = sns.Topic.from_topic_arn(self, f"Forward{i}", s.target)
                self.actions.append(cw_actions.SnsAction(other))
            else:
                raise ValueError(f"alarm subscriber kind {s.kind!r} (one of email, https, sns)")


class EndpointMonitoring(Construct):
    """Operational and rollback alarms of every variant, operational alarms of shadow variants, their topic,
    and a dashboard."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        endpoint: InferenceEndpoint,
        endpoint_config_name: str,
        variant_names: Sequence[str],
        thresholds: AlarmThresholds,
        encryption_key: kms.IKey,
        subscribers: Sequence[Subscriber] = (),
        is_async: bool = False,
        shadow_variant_names: Sequence[str] = (),
    ) -> None:
        super().__init__(scope, id_)
        t = thresholds
        self.alarm_topic = AlarmTopic(
            self, "AlarmTopic", encryption_key=encryption_key, subscribers=subscribers
        )
        self.topic = self.alarm_topic.topic
        # The topic's id from before AlarmTopic existed: a replaced topic would lose its subscriptions.
        pin(self.topic, id_, "AlarmTopic", "Resource")
        self.alarms: list[cloudwatch.Alarm] = []
        self.rollback_alarms: list[cloudwatch.Alarm] = []
        self.shadow_alarms: list[cloudwatch.Alarm] = []
        shadows = set(shadow_variant_names)
        dashboard = cloudwatch.Dashboard(self, "Dashboard")
        requests = "InvocationsProcessed" if is_async else "Invocations"

        def alarm(id_: str, metric: cloudwatch.IMetric, threshold: float, what: str) -> cloudwatch.Alarm:
            a = cloudwatch.Alarm(
                self,
                id_,
                metric=metric,
                threshold=threshold,
                evaluation_periods=t.evaluation_periods,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                alarm_description=f"{what} (endpoint {endpoint.endpoint_name})",
            )
            for action in self.alarm_topic.actions:
                a.add_alarm_action(action)
                a.add_ok_action(action)
            return a

        def rate(errors: str, v: str, config_name: str | None = None) -> cloudwatch.MathExpression:
            # Ids unique per graph: the dashboard plots the 4XX and 5XX rates together.
            e, r = f"e{errors[10]}", f"r{errors[10]}"
            return cloudwatch.MathExpression(
                expression=f"IF({r} > 0, 100 * {e} / {r}, 0)",
                using_metrics={
                    e: endpoint.metric(errors, variant_name=v, endpoint_config_name=config_name),
                    r: endpoint.metric(requests, variant_name=v, endpoint_config_name=config_name),
                },
                label=f"{errors} % of {requests}",
                period=cdk.Duration.minutes(1),
            )

        for v in [*variant_names, *shadow_variant_names]:
            latency = endpoint.metric("ModelLatency", variant_name=v, statistic="p99")
            p99 = t.latency_p99_ms * MICROSECONDS_PER_MS
            operational = self.shadow_alarms if v in shadows else self.alarms
            kind = "Shadow variant" if v in shadows else "Variant"
            operational += [
                alarm(f"{v}5xxRate", rate("Invocation5XXErrors", v), t.error_5xx_percent,
                      f"{kind} {v}: >= {t.error_5xx_percent}% of requests fail with 5XX"),
                alarm(f"{v}4xxRate", rate("Invocation4XXErrors", v), t.error_4xx_percent,
                      f"{kind} {v}: >= {t.error_4xx_percent}% of requests rejected with 4XX (client errors)"),
                alarm(f"{v}LatencyP99", latency, p99, f"{kind} {v}: ModelLatency p99 >= {t.latency_p99_ms} ms"),
            ]  # fmt: skip
            if v not in shadows:
                new_latency = endpoint.metric(
                    "ModelLatency", variant_name=v, statistic="p99", endpoint_config_name=endpoint_config_name
                )
                self.rollback_alarms += [
                    alarm(f"{v}NewFleet5xxRate", rate("Invocation5XXErrors", v, endpoint_config_name),
                          t.error_5xx_percent, f"Rollback: new fleet of {v}: >= {t.error_5xx_percent}% 5XX"),
                    alarm(f"{v}NewFleetLatencyP99", new_latency, p99,
                          f"Rollback: new fleet of {v}: ModelLatency p99 >= {t.latency_p99_ms} ms"),
                ]  # fmt: skip
            dashboard.add_widgets(
                cloudwatch.GraphWidget(
                    title=f"{v}: {requests}", left=[endpoint.metric(requests, variant_name=v)], width=8
                ),
                cloudwatch.GraphWidget(
                    title=f"{v}: error rates (%)",
                    left=[rate("Invocation4XXErrors", v), rate("Invocation5XXErrors", v)],
                    width=8,
                ),
                cloudwatch.GraphWidget(title=f"{v}: ModelLatency p99 (us)", left=[latency], width=8),
            )
        if t.backlog_age_seconds is not None:
            age = endpoint.metric("ApproximateAgeOfOldestRequest", statistic="Maximum")
            backlog = endpoint.metric("ApproximateBacklogSize", statistic="Average")
            self.alarms.append(
                alarm(
                    "BacklogAge",
                    age,
                    t.backlog_age_seconds,
                    f"Oldest queued async request >= {t.backlog_age_seconds} s",
                )
            )
            dashboard.add_widgets(
                cloudwatch.GraphWidget(title="async backlog", left=[backlog], right=[age], width=24),
            )
        dashboard.add_widgets(
            cloudwatch.AlarmStatusWidget(
                title="alarms", alarms=[*self.alarms, *self.rollback_alarms, *self.shadow_alarms], width=24
            ),
        )
        self.dashboard = dashboard
