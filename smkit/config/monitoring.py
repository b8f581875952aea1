"""The ``monitoring`` section: CloudWatch alarms (operational and auto-rollback), who is notified, log
retention."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from smkit.aws.limits import ALARM_PERIOD_S, MAX_SUB_HOUR_EVALUATION_S, MIN_EVALUATION_PERIODS
from smkit.aws.patterns import SNS_TOPIC_ARN
from smkit.config.base import Frozen


class EmailSubscription(Frozen):
    """Alarm notifications by email (the address must confirm the subscription once)."""

    type: Literal["email"]
    address: str = Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class HttpsSubscription(Frozen):
    """Alarm notifications POSTed to an HTTPS endpoint (e.g. a paging service's SNS integration URL)."""

    type: Literal["https"]
    url: str = Field(pattern=r"^https://[^\s]+$")


class TopicSubscription(Frozen):
    """Alarm notifications also published to an existing SNS topic (e.g. a central operations topic).

    That topic's policy must allow ``cloudwatch.amazonaws.com`` to publish, and its KMS key (if any) must
    allow CloudWatch to use it: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html
    """

    type: Literal["sns"]
    topic_arn: str = Field(pattern=SNS_TOPIC_ARN)


AlarmSubscription = Annotated[
    EmailSubscription | HttpsSubscription | TopicSubscription, Field(discriminator="type")
]


class Monitoring(Frozen):
    """CloudWatch alarms, their SNS topic and who gets it, the auto-rollback alarms, logs and a dashboard.

    Operational alarms (to people): per variant, 5XX error rate, 4XX error rate and p99 ModelLatency of the
    whole variant; async: age of the oldest queued request. Rollback alarms (to the deployment guardrails):
    per variant, 5XX error rate and p99 ModelLatency of the *new* fleet only (metrics dimensioned by the new
    EndpointConfigName), so an incident on the old fleet does not roll back its own fix.
    https://docs.aws.amazon.com/sagemaker/latest/dg/deployment-guardrails-configuration.html
    """

    alarms: bool = True
    latency_p99_ms: int = Field(
        1000, ge=1, description="p99 ModelLatency (ms) that trips the latency alarms."
    )
    error_5xx_percent: float = Field(
        1.0,
        gt=0,
        le=100,
        description="Invocation5XXErrors as a percentage of requests that trips the 5XX alarms. Default 1.",
    )
    error_4xx_percent: float = Field(
        10.0,
        gt=0,
        le=100,
        description="Invocation4XXErrors as a percentage of requests that trips the 4XX alarm (operational "
        "only: client errors never roll a deployment back). Default 10.",
    )
    backlog_age_seconds: int | None = Field(None, ge=60, description="Async only: oldest request age alarm.")
    evaluation_periods: int = Field(
        3, ge=MIN_EVALUATION_PERIODS, le=MAX_SUB_HOUR_EVALUATION_S // ALARM_PERIOD_S
    )
    subscriptions: list[AlarmSubscription] = Field(
        default_factory=list,
        description="Who gets the alarm topic's notifications: email addresses, HTTPS endpoints, or other "
        "SNS topics. Default: none (the topic's ARN is a stack output; subscribe later). "
        "https://docs.aws.amazon.com/sns/latest/dg/sns-create-subscribe-endpoint-to-topic.html",
    )
    log_retention_days: int = Field(
        90,
        description="Retention of the endpoint's CloudWatch log group (/aws/sagemaker/Endpoints/NAME) and of "
        "the deployment helpers' logs; one of CloudWatch Logs' retention values. Default 90. "
        "https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutRetentionPolicy.html",
    )
