"""CloudWatch alarm evaluation for the emulator: moto stores alarms and datapoints but never evaluates them.

:func:`evaluate_alarms` does what CloudWatch does for each metric alarm, through the CloudWatch API of the
emulator only (GetMetricStatistics to read, SetAlarmState to change state), so it works on any moto server
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html):

- the alarm's last ``EvaluationPeriods`` periods of ``Period`` seconds, ending now (the current, partly
  filled period included, so that traffic shows at once);
- each period's value: the alarm's ``Statistic`` of its metric, or its metric-math expression (``Metrics``
  with one ``ReturnData`` expression over ``MetricStat`` members; arithmetic, comparisons and ``IF``);
- a period breaches when its value compared with ``Threshold`` by ``ComparisonOperator`` holds; a period
  without data is breaching, not breaching, ignored or missing as ``TreatMissingData`` says;
- ALARM when at least ``DatapointsToAlarm`` (default: ``EvaluationPeriods``) periods breach, else OK;
  every period without data: INSUFFICIENT_DATA (``missing``), the state kept (``ignore``), ALARM
  (``breaching``) or OK (``notBreaching``).

Not evaluated (left as they are, with the reason in the result): alarms on extended statistics (``p99``:
moto's GetMetricStatistics has no percentiles), anomaly detection, and expressions beyond that grammar.
``smkit emulator alarms`` runs one evaluation and prints the states; :func:`evaluate_alarms` is the API.
"""

from __future__ import annotations

import ast
import json
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

STANDARD_STATISTICS = ("SampleCount", "Average", "Sum", "Minimum", "Maximum")
COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "GreaterThanOrEqualToThreshold": operator.ge,
    "GreaterThanThreshold": operator.gt,
    "LessThanThreshold": operator.lt,
    "LessThanOrEqualToThreshold": operator.le,
}


class NotEvaluated(ValueError):
    """An alarm this evaluator cannot evaluate; the message says why."""


@dataclass(frozen=True)
class AlarmEvaluation:
    """One alarm's evaluation: the values per period (oldest first, None: no data), the state it is in now,
    whether this evaluation changed it, and why an alarm was not evaluated."""

    name: str
    values: tuple[float | None, ...]
    state: str
    changed: bool
    not_evaluated: str | None = None


def _windows(now: datetime, period: int, count: int) -> list[tuple[datetime, datetime]]:
    end = now.replace(microsecond=0) + timedelta(seconds=1)
    return [
        (end - timedelta(seconds=period * (k + 1)), end - timedelta(seconds=period * k))
        for k in reversed(range(count))
    ]


def _statistic(
    cloudwatch: Any, metric: Mapping[str, Any], stat: str, window: tuple[datetime, datetime]
) -> float | None:
    if stat not in STANDARD_STATISTICS:
        raise NotEvaluated(
            f"statistic {stat!r} (moto's GetMetricStatistics has only {', '.join(STANDARD_STATISTICS)})"
        )
    start, end = window
    points = cloudwatch.get_metric_statistics(
        Namespace=metric["Namespace"],
        MetricName=metric["MetricName"],
        Dimensions=metric.get("Dimensions", []),
        StartTime=start,
        EndTime=end,
        Period=int((end - start).total_seconds()),
        Statistics=[stat],
    )["Datapoints"]
    if not points:
        return None
    if stat == "Average":  # one period may come back in more than one bucket: weigh them
        return sum(p[stat] for p in points) / len(points)
    values = [p[stat] for p in points]
    return {"Minimum": min, "Maximum": max}.get(stat, sum)(values)


def _expression(text: str, values: Mapping[str, float | None]) -> float | None:
    """A metric-math expression of arithmetic, comparisons and IF over ``values`` (None: no data)."""
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        raise NotEvaluated(f"expression {text!r} is outside the supported grammar") from None

    def ev(node: ast.expr) -> float | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name) and node.id in values:
            return values[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = ev(node.operand)
            return None if v is None else -v
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
            a, b = ev(node.left), ev(node.right)
            if a is None or b is None:
                return None
            if isinstance(node.op, ast.Div) and b == 0:
                return None
            return float(_ARITHMETIC[type(node.op)](a, b))
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
            a, b = ev(node.left), ev(node.comparators[0])
            if a is None or b is None:
                return None
            return 1.0 if _COMPARE[type(node.ops[0])](a, b) else 0.0
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "IF":
            if len(node.args) not in (2, 3):
                raise NotEvaluated(f"IF takes 2 or 3 arguments in {text!r}")
            condition = ev(node.args[0])
            if condition is None:
                return None
            if condition:
                return ev(node.args[1])
            return ev(node.args[2]) if len(node.args) == 3 else None
        raise NotEvaluated(f"expression {text!r}: {ast.unparse(node)!r} is outside the supported grammar")

    return ev(tree)


_ARITHMETIC: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_COMPARE: dict[type, Callable[[float, float], bool]] = {
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}


def _period_values(cloudwatch: Any, alarm: Mapping[str, Any], now: datetime) -> list[float | None]:
    count = int(alarm["EvaluationPeriods"])
    if alarm.get("ThresholdMetricId"):
        raise NotEvaluated("anomaly detection band")
    if "MetricName" in alarm:
        if "Statistic" not in alarm:
            raise NotEvaluated(
                f"extended statistic {alarm.get('ExtendedStatistic')!r} (no percentiles in moto)"
            )
        metric = {k: alarm[k] for k in ("Namespace", "MetricName", "Dimensions") if k in alarm}
        return [
            _statistic(cloudwatch, metric, alarm["Statistic"], w)
            for w in _windows(now, int(alarm["Period"]), count)
        ]
    queries = alarm.get("Metrics") or []
    stats = {q["Id"]: q["MetricStat"] for q in queries if "MetricStat" in q}
    results = [q for q in queries if q.get("ReturnData", True) and "Expression" in q]
    if len(results) != 1:
        raise NotEvaluated("metric math alarm without exactly one ReturnData expression")
    periods = {int(s["Period"]) for s in stats.values()} or {int(results[0].get("Period", 60))}
    if len(periods) != 1:
        raise NotEvaluated(f"metric math over periods {sorted(periods)}")
    out: list[float | None] = []
    for window in _windows(now, periods.pop(), count):
        values = {i: _statistic(cloudwatch, s["Metric"], s["Stat"], window) for i, s in stats.items()}
        out.append(_expression(results[0]["Expression"], values))
    return out


def _state(alarm: Mapping[str, Any], values: list[float | None]) -> str:
    compare = COMPARISONS.get(alarm["ComparisonOperator"])
    if compare is None:
        raise NotEvaluated(f"comparison {alarm['ComparisonOperator']} (anomaly detection)")
    treat = alarm.get("TreatMissingData", "missing")
    needed = int(alarm.get("DatapointsToAlarm") or alarm["EvaluationPeriods"])
    if all(v is None for v in values):
        return {
            "breaching": "ALARM",
            "notBreaching": "OK",
            "ignore": alarm.get("StateValue", "INSUFFICIENT_DATA"),
        }.get(treat, "INSUFFICIENT_DATA")
    breaches = sum(
        (treat == "breaching") if v is None else compare(v, float(alarm["Threshold"])) for v in values
    )
    return "ALARM" if breaches >= needed else "OK"


def evaluate_alarms(
    cloudwatch: Any, *, names: Iterable[str] | None = None, now: datetime | None = None
) -> list[AlarmEvaluation]:
    """Evaluate every metric alarm (or those named) at ``now`` and set the state of those that change."""
    now = now or datetime.now(UTC)
    kwargs: dict[str, Any] = {"AlarmTypes": ["MetricAlarm"]}
    if names is not None:
        kwargs["AlarmNames"] = list(names)
    alarms = [
        a
        for page in cloudwatch.get_paginator("describe_alarms").paginate(**kwargs)
        for a in page["MetricAlarms"]
    ]
    out = []
    for alarm in alarms:
        name, current = alarm["AlarmName"], alarm.get("StateValue", "INSUFFICIENT_DATA")
        try:
            values = _period_values(cloudwatch, alarm, now)
            state = _state(alarm, values)
        except NotEvaluated as exc:
            out.append(AlarmEvaluation(name, (), current, False, str(exc)))
            continue
        changed = state != current
        if changed:
            shown = ", ".join("-" if v is None else f"{v:g}" for v in values)
            cloudwatch.set_alarm_state(
                AlarmName=name,
                StateValue=state,
                StateReason=f"Evaluated by the emulator: [{shown}] against {alarm['ComparisonOperator']} "
                f"{alarm['Threshold']:g} over {len(values)} periods.",
                StateReasonData=json.dumps(
                    {"version": "1.0", "evaluatedDatapoints": [v for v in values if v is not None]}
                ),
            )
        out.append(AlarmEvaluation(name, tuple(values), state, changed))
    return out
