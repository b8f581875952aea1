"""CloudWatch alarms, the SNS topic that carries them to people, the auto-rollback alarms, and a dashboard,
for an endpoint's variants or for its inference components (one construct, one alarm factory).

Metrics: https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html
(``ModelLatency`` is in microseconds; ``ApproximateAgeOfOldestRequest`` in seconds, async only; async
endpoints publish ``InvocationsProcessed`` instead of ``Invocations``,
https://docs.aws.amazon.com/sagemaker/latest/dg/async-inference-monitor.html; an inference component's
invocation metrics carry ``InferenceComponentName``).

What an alarm measures (:class:`Measure`) decides whether it may roll a deployment back: the 5XX error rate
and p99 ``ModelLatency`` do, the 4XX rate (a caller's bad request is not the model's fault) and the async
backlog's age only notify.

- **Variants**: per variant, operational alarms (to the topic) on the 5XX and 4XX rates and p99 latency of
  the whole variant, and rollback alarms (to the endpoint's AutoRollbackConfiguration) on the *new* fleet
  only: their metrics carry the new ``EndpointConfigName``, so an incident on the old fleet does not roll
  back the deployment that fixes it. Async: the age of the oldest queued request.
  https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-configuration.html
- **Shadow variants** get the operational alarms (``shadow_alarms``) and no rollback alarms: their answers
  reach no caller, so they never roll production back.
- **Inference components**: per component, the same three alarms; its 5XX and latency alarms are also the
  rollback alarms of its rolling updates.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from smkit.aws.limits import MAX_ALARM_ACTIONS
from smkit.cdk.constructs.arns import every_arn
from smkit.cdk.constructs.cloudwatch_metrics import DEFAULT_PERIOD
from smkit.cdk.constructs.endpoint import InferenceEndpoint
from smkit.cdk.constructs.execution_role import grant_statement
from smkit.cdk.constructs.inference_component import InferenceComponent
from smkit.cdk.constructs.logical_ids import pin

MICROSECONDS_PER_MS = 1000


@dataclass(frozen=True)
class AlarmThresholds:
    """When the alarms fire; each must hold for ``evaluation_periods`` consecutive minutes."""

    latency_p99: cdk.Duration
    error_5xx_percent: float
    error_4xx_percent: float
    backlog_age: cdk.Duration | None = None
    evaluation_periods: int = 3

    @property
    def latency_p99_ms(self) -> int:
        """The latency threshold in whole milliseconds (alarm descriptions)."""
        return int(self.latency_p99.to_milliseconds())

    @property
    def backlog_age_seconds(self) -> int | None:
        """The backlog age threshold in whole seconds (None: no backlog alarm)."""
        return None if self.backlog_age is None else int(self.backlog_age.to_seconds())


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
                    "ArnLike": {"aws:SourceArn": every_arn(stack, "cloudwatch", "alarm")},
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
        if len(self.actions) > MAX_ALARM_ACTIONS:
            raise ValueError(
                f"{self.node.path}: {len(self.actions)} alarm actions (this topic and {len(self.actions) - 1} "
                f"forwarded topics), but an alarm takes at most {MAX_ALARM_ACTIONS} AlarmActions; forward to at "
                f"most {MAX_ALARM_ACTIONS - 1} topics "
                "(https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html)"
            )


class Measure(enum.Enum):
    """What an alarm measures; whether such an alarm may roll a deployment back is decided by this alone."""

    ERROR_5XX_RATE = "5xx"
    ERROR_4XX_RATE = "4xx"
    LATENCY_P99 = "latency"
    BACKLOG_AGE = "backlog"

    @property
    def rolls_back(self) -> bool:
        """The model's own failures (5XX, latency) roll back; a caller's bad request (4XX) and a queue's age
        only notify."""
        return self in (Measure.ERROR_5XX_RATE, Measure.LATENCY_P99)


ALARM_SUFFIX = {
    Measure.ERROR_5XX_RATE: "5xxRate",
    Measure.ERROR_4XX_RATE: "4xxRate",
    Measure.LATENCY_P99: "LatencyP99",
}


@dataclass(frozen=True)
class _Watched:
    """What one set of alarms watches: a variant's whole fleet, a variant's new fleet (the endpoint config
    being deployed; its alarms are the rollback alarms), a shadow variant, or an inference component."""

    key: str  # construct id prefix of its alarms
    metric: Callable[..., cloudwatch.Metric]  # (metric_name, statistic=...) -> its metric
    requests: str  # the request count metric
    descriptions: Mapping[Measure, str]  # the measures it is alarmed on, and what the alarm says
    rate_label: Callable[[str], str]  # errors metric name -> the rate's label
    operational: bool = True  # its alarms notify (``alarms``, ``shadow_alarms``)
    rollback: bool = False  # its alarms of a measure that rolls back are rollback alarms
    shadow: bool = False
    graphed: tuple[str, ...] = ()  # the request metrics of its dashboard row
    graph_title: str = ""


class EndpointMonitoring(Construct):
    """The alarms of an endpoint, their topic, and a dashboard: operational and rollback alarms of every
    variant, operational alarms of shadow variants, or the alarms of every inference component (``components``,
    for an inference-component endpoint; a component's 5XX and latency alarms roll its rolling updates back).

    The variants watched are ``endpoint``'s (its endpoint config's production and shadow variants); the new
    fleet's rollback alarms carry that config's name (``EndpointConfigName``). With ``components`` the
    components are watched instead.

    https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html (invocation metrics carry
    ``EndpointName`` and ``VariantName``, or ``InferenceComponentName``).
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        endpoint: InferenceEndpoint,
        thresholds: AlarmThresholds,
        encryption_key: kms.IKey,
        subscribers: Sequence[Subscriber] = (),
        is_async: bool = False,
        components: Mapping[str, InferenceComponent] | None = None,
    ) -> None:
        super().__init__(scope, id_)
        of_variants = components is None
        variant_names = endpoint.variant_names if of_variants else ()
        shadow_variant_names = endpoint.shadow_variant_names if of_variants else ()
        endpoint_config_name = endpoint.endpoint_config.endpoint_config_name
        if of_variants and not variant_names:
            raise ValueError(
                f"{self.node.path}: the endpoint's config names no variants: import it with "
                "EndpointConfiguration.from_endpoint_config_name(..., variant_names=[...]), or give components"
            )
        self.thresholds = t = thresholds
        self.alarm_topic = AlarmTopic(
            self, "AlarmTopic", encryption_key=encryption_key, subscribers=subscribers
        )
        self.topic = self.alarm_topic.topic
        # The topic's id from before AlarmTopic existed: a replaced topic would lose its subscriptions.
        pin(self.topic, id_, "AlarmTopic", "Resource")
        self.endpoint = endpoint
        self.alarms: list[cloudwatch.Alarm] = []
        self.rollback_alarms: list[cloudwatch.Alarm] = []
        self.shadow_alarms: list[cloudwatch.Alarm] = []
        self._by_key: dict[str, list[cloudwatch.Alarm]] = {}
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard")
        for watched in self._watched(
            variant_names, shadow_variant_names, components or {}, endpoint_config_name, is_async
        ):
            self._watch(watched)
        if t.backlog_age_seconds is not None:
            age = endpoint.metric("ApproximateAgeOfOldestRequest", statistic="Maximum")
            backlog = endpoint.metric("ApproximateBacklogSize", statistic="Average")
            self.alarms.append(
                self._alarm(
                    "BacklogAge",
                    age,
                    t.backlog_age_seconds,
                    f"Oldest queued async request >= {t.backlog_age_seconds} s (endpoint {endpoint.endpoint_name})",
                )
            )
            self.dashboard.add_widgets(
                cloudwatch.GraphWidget(title="async backlog", left=[backlog], right=[age], width=24),
            )
        self.dashboard.add_widgets(
            cloudwatch.AlarmStatusWidget(
                title="alarms",
                alarms=[
                    *self.alarms,
                    *[a for a in self.rollback_alarms if a not in self.alarms],
                    *self.shadow_alarms,
                ],
                width=24,
            ),
        )

    def alarms_of(self, name: str) -> list[cloudwatch.Alarm]:
        """The alarms of one variant or inference component (by its name in the config)."""
        return list(self._by_key.get(name, []))

    def rollback_alarms_of(self, name: str) -> list[cloudwatch.Alarm]:
        """The rollback alarms of one variant (its new fleet's) or inference component."""
        return [
            a
            for a in self.rollback_alarms
            if a in self._by_key.get(name, []) or a in self._by_key.get(f"{name}NewFleet", [])
        ]

    def grant_describe_rollback_alarms(
        self, grantee: iam.IGrantable, alarms: Sequence[cloudwatch.IAlarm] | None = None
    ) -> iam.Grant:
        """``cloudwatch:DescribeAlarms`` on the rollback alarms a deployment configuration names (``alarms``;
        default: all of :attr:`rollback_alarms`), which SageMaker reads with the execution role
        (https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-configuration.html). Give the
        role's :meth:`~smkit.cdk.constructs.execution_role.ExecutionRole.separate_policy`: the alarms watch
        the endpoint config that names the Model, which waits for the role's access policies."""
        named = list(self.rollback_alarms if alarms is None else alarms)
        if not named:
            raise ValueError("grant_describe_rollback_alarms: no alarm is named, so nothing is to be read")
        return grant_statement(
            grantee,
            iam.PolicyStatement(
                sid="RollbackAlarms",
                actions=["cloudwatch:DescribeAlarms"],
                resources=[a.alarm_arn for a in named],
            ),
        )

    def _watched(
        self,
        variant_names: Sequence[str],
        shadow_variant_names: Sequence[str],
        components: Mapping[str, InferenceComponent],
        endpoint_config_name: str | None,
        is_async: bool,
    ) -> list[tuple[_Watched, ...]]:
        """Each variant (with its new fleet) or component, in order."""
        t, endpoint = self.thresholds, self.endpoint
        requests = "InvocationsProcessed" if is_async else "Invocations"
        out: list[tuple[_Watched, ...]] = []
        for v in [*variant_names, *shadow_variant_names]:
            shadow = v in shadow_variant_names
            kind = "Shadow variant" if shadow else "Variant"
            on = f" (endpoint {endpoint.endpoint_name})"
            whole = _Watched(
                key=v,
                metric=functools.partial(endpoint.metric, variant_name=v),
                requests=requests,
                descriptions={
                    Measure.ERROR_5XX_RATE: f"{kind} {v}: >= {t.error_5xx_percent}% of requests fail with 5XX{on}",
                    Measure.ERROR_4XX_RATE: (
                        f"{kind} {v}: >= {t.error_4xx_percent}% of requests rejected with 4XX (client errors){on}"
                    ),
                    Measure.LATENCY_P99: f"{kind} {v}: ModelLatency p99 >= {t.latency_p99_ms} ms{on}",
                },
                rate_label=lambda errors: f"{errors} % of {requests}",
                shadow=shadow,
                graphed=(requests,),
                graph_title=f"{v}: {requests}",
            )
            if shadow:  # its answers reach no caller: it never rolls production back
                out.append((whole,))
                continue
            new_fleet = dataclasses.replace(
                whole,
                key=f"{v}NewFleet",
                metric=functools.partial(
                    endpoint.metric, variant_name=v, endpoint_config_name=endpoint_config_name
                ),
                descriptions={
                    Measure.ERROR_5XX_RATE: f"Rollback: new fleet of {v}: >= {t.error_5xx_percent}% 5XX{on}",
                    Measure.LATENCY_P99: f"Rollback: new fleet of {v}: ModelLatency p99 >= {t.latency_p99_ms} ms{on}",
                },
                operational=False,
                rollback=True,
            )
            out.append((whole, new_fleet))
        for name, component in components.items():
            about = f"Inference component {name} ({component.component_name}): "
            watched = _Watched(
                key=name,
                metric=component.metric,
                requests="Invocations",
                descriptions={
                    Measure.ERROR_5XX_RATE: f"{about}>= {t.error_5xx_percent}% of requests fail with 5XX",
                    Measure.ERROR_4XX_RATE: f"{about}>= {t.error_4xx_percent}% of requests rejected (4XX)",
                    Measure.LATENCY_P99: f"{about}ModelLatency p99 >= {t.latency_p99_ms} ms",
                },
                rate_label=lambda errors: f"{errors[10]}XX % of requests",
                rollback=True,
                graphed=("Invocations", "NoCapacityInvocationFailures"),
                graph_title=f"{name}: invocations",
            )
            out.append((watched,))
        return out

    def _watch(self, fleets: tuple[_Watched, ...]) -> None:
        """The alarms of one variant (and its new fleet) or component, and its row of the dashboard."""
        t = self.thresholds
        thresholds = {
            Measure.ERROR_5XX_RATE: t.error_5xx_percent,
            Measure.ERROR_4XX_RATE: t.error_4xx_percent,
            Measure.LATENCY_P99: t.latency_p99_ms * MICROSECONDS_PER_MS,
        }
        for w in fleets:
            made = []
            for measure, description in w.descriptions.items():
                if not (w.operational or measure.rolls_back):
                    continue
                alarm = self._alarm(
                    f"{w.key}{ALARM_SUFFIX[measure]}",
                    self._measured(w, measure),
                    thresholds[measure],
                    description,
                )
                made.append(alarm)
                if w.operational:
                    (self.shadow_alarms if w.shadow else self.alarms).append(alarm)
                if w.rollback and measure.rolls_back:
                    self.rollback_alarms.append(alarm)
            self._by_key[w.key] = made
        watched = fleets[0]
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title=watched.graph_title, left=[watched.metric(m) for m in watched.graphed], width=8
            ),
            cloudwatch.GraphWidget(
                title=f"{watched.key}: error rates (%)",
                left=[
                    self._measured(watched, Measure.ERROR_4XX_RATE),
                    self._measured(watched, Measure.ERROR_5XX_RATE),
                ],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title=f"{watched.key}: ModelLatency p99 (us)",
                left=[self._measured(watched, Measure.LATENCY_P99)],
                width=8,
            ),
        )

    def _measured(self, w: _Watched, measure: Measure) -> cloudwatch.IMetric:
        """The metric (or math expression) an alarm of ``measure`` on ``w`` watches."""
        if measure is Measure.LATENCY_P99:
            return w.metric("ModelLatency", statistic="p99")
        errors = "Invocation5XXErrors" if measure is Measure.ERROR_5XX_RATE else "Invocation4XXErrors"
        # Ids unique per graph: the dashboard plots the 4XX and 5XX rates together.
        e, r = f"e{errors[10]}", f"r{errors[10]}"
        return cloudwatch.MathExpression(
            expression=f"IF({r} > 0, 100 * {e} / {r}, 0)",
            using_metrics={e: w.metric(errors), r: w.metric(w.requests)},
            label=w.rate_label(errors),
            period=DEFAULT_PERIOD,
        )

    def _alarm(
        self, id_: str, metric: cloudwatch.IMetric, threshold: float, description: str
    ) -> cloudwatch.Alarm:
        """The one alarm factory: ``threshold`` or more for ``evaluation_periods`` minutes, missing data not
        breaching, alarm and OK to the topic (and forwarded topics)."""
        alarm = cloudwatch.Alarm(
            self,
            id_,
            metric=metric,
            threshold=threshold,
            evaluation_periods=self.thresholds.evaluation_periods,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        for action in self.alarm_topic.actions:
            alarm.add_alarm_action(action)
            alarm.add_ok_action(action)
        return alarm
