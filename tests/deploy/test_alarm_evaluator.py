"""The emulator's alarm evaluator (smkit/emulator/alarms.py) against moto's server: datapoints put with
PutMetricData, alarms put with PutMetricAlarm, states read back with DescribeAlarms."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from smkit.emulator import MotoServer
from smkit.emulator.alarms import evaluate_alarms

NOW = datetime.now(UTC).replace(microsecond=0)


def _put(cloudwatch: Any, metric: str, endpoint: str, value: float, minutes_ago: int) -> None:
    cloudwatch.put_metric_data(
        Namespace="AWS/SageMaker",
        MetricData=[
            {
                "MetricName": metric,
                "Dimensions": [{"Name": "EndpointName", "Value": endpoint}],
                "Timestamp": NOW - timedelta(minutes=minutes_ago, seconds=30),
                "Value": value,
                "Unit": "Count",
            }
        ],
    )


def _alarm(cloudwatch: Any, endpoint: str, **settings: Any) -> str:
    name = f"alarm-{uuid.uuid4().hex[:8]}"
    cloudwatch.put_metric_alarm(
        AlarmName=name,
        Namespace="AWS/SageMaker",
        MetricName="Invocation5XXErrors",
        Dimensions=[{"Name": "EndpointName", "Value": endpoint}],
        Statistic="Sum",
        Period=60,
        Threshold=1,
        ComparisonOperator="GreaterThanOrEqualToThreshold",
        **{"EvaluationPeriods": 3, **settings},
    )
    return name


@pytest.mark.parametrize(
    ("breaching_minutes", "settings", "state"),
    [
        ([0, 1, 2], {}, "ALARM"),  # 3 of 3
        ([0, 1], {}, "OK"),  # 2 of 3, the third missing: missing data does not breach by itself
        ([0, 1], {"DatapointsToAlarm": 2}, "ALARM"),  # 2 of 3
        ([0], {"TreatMissingData": "breaching"}, "ALARM"),  # the two missing periods breach
        ([], {"TreatMissingData": "missing"}, "INSUFFICIENT_DATA"),
        ([], {"TreatMissingData": "notBreaching"}, "OK"),
        ([], {"TreatMissingData": "breaching"}, "ALARM"),
    ],
)
def test_datapoints_and_missing_data_decide_the_state(
    emulator: MotoServer, breaching_minutes: list[int], settings: dict[str, Any], state: str
) -> None:
    cloudwatch = emulator.client("cloudwatch")
    endpoint = f"e-{uuid.uuid4().hex[:8]}"
    for minute in breaching_minutes:
        _put(cloudwatch, "Invocation5XXErrors", endpoint, 2, minute)
    name = _alarm(cloudwatch, endpoint, **settings)
    [result] = evaluate_alarms(cloudwatch, names=[name], now=NOW)
    assert result.state == state, result
    assert cloudwatch.describe_alarms(AlarmNames=[name])["MetricAlarms"][0]["StateValue"] == state


def test_an_alarm_on_a_percentile_is_left_as_it_is_and_says_why(emulator: MotoServer) -> None:
    cloudwatch = emulator.client("cloudwatch")
    name = f"alarm-{uuid.uuid4().hex[:8]}"
    cloudwatch.put_metric_alarm(
        AlarmName=name,
        Namespace="AWS/SageMaker",
        MetricName="ModelLatency",
        ExtendedStatistic="p99",
        Period=60,
        EvaluationPeriods=1,
        Threshold=1,
        ComparisonOperator="GreaterThanThreshold",
    )
    before = cloudwatch.describe_alarms(AlarmNames=[name])["MetricAlarms"][0]["StateValue"]
    [result] = evaluate_alarms(cloudwatch, names=[name], now=NOW)
    assert not result.changed and result.state == before
    assert result.not_evaluated is not None and "p99" in result.not_evaluated
