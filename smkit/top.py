"""What ``smkit top`` shows: a running endpoint's Prometheus metrics, read twice and compared.

Each refresh reads the metrics text (a container's ``/metrics``, or the local endpoint's
``/endpoints/NAME/metrics``, which labels every container's samples with its variant and container), parses
it with ``prometheus_client``'s parser and compares it with the previous reading: requests per second and
errors from the ``smkit_requests_total`` counters, p50 and p99 of each phase from the buckets of
``smkit_request_phase_seconds`` and ``smkit_request_duration_seconds`` added since the last reading (the
quantile as Prometheus's ``histogram_quantile`` estimates it, linearly inside the bucket), queue depth and
workers from the gauges. Rows are per variant, container and model (docs/observability.md).
"""

from __future__ import annotations

import math
import urllib.request
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

PHASES = ("queue_wait", "input_fn", "predict_fn", "output_fn")

Key = tuple[str, ...]  # (variant, container, model)


@dataclass
class Reading:
    """One reading of the metrics, indexed for comparison."""

    at: float
    requests: dict[Key, float] = field(default_factory=dict)
    errors_4xx: dict[Key, float] = field(default_factory=dict)
    errors_5xx: dict[Key, float] = field(default_factory=dict)
    # (key, phase) -> {upper bound: cumulative count}
    buckets: dict[tuple[Key, str], dict[float, float]] = field(default_factory=dict)
    gauges: dict[tuple[str, str, str], float] = field(default_factory=dict)  # (name, variant, container)


def fetch(url: str, timeout: float = 5.0) -> str:
    """The metrics text at ``url``."""
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - a URL the user gave
        return str(response.read().decode("utf-8"))


def parse(text: str, at: float) -> Reading:
    """Index the samples of ``text`` (Prometheus text format) read at ``at`` (seconds)."""
    reading = Reading(at)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            variant, container = labels.get("variant", ""), labels.get("container", "")
            key = (variant, container, labels.get("model", ""))
            name = sample.name
            if name == "smkit_requests_total" and labels.get("route") in (
                "/invocations",
                "/models/{name}/invoke",
            ):
                _add(reading.requests, key, sample.value)
                status = labels.get("status", "")
                if status.startswith("4"):
                    _add(reading.errors_4xx, key, sample.value)
                elif status.startswith("5"):
                    _add(reading.errors_5xx, key, sample.value)
            elif name == "smkit_request_phase_seconds_bucket":
                _bucket(reading, key, labels["phase"], labels["le"], sample.value)
            elif name == "smkit_request_duration_seconds_bucket" and labels.get("route") == "/invocations":
                _bucket(reading, key, "total", labels["le"], sample.value)
            elif family.type == "gauge" and name.startswith("smkit_"):
                state = labels.get("state")
                gauge = f"{name}:{state}" if state else name
                place = (gauge, variant, container)
                reading.gauges[place] = reading.gauges.get(place, 0.0) + sample.value
    return reading


def _add(table: dict[Key, float], key: Key, value: float) -> None:
    table[key] = table.get(key, 0.0) + value


def _bucket(reading: Reading, key: Key, phase: str, le: str, value: float) -> None:
    bound = math.inf if le == "+Inf" else float(le)
    counts = reading.buckets.setdefault((key, phase), {})
    counts[bound] = counts.get(bound, 0.0) + value


def quantile(q: float, buckets: Mapping[float, float]) -> float | None:
    """``histogram_quantile(q, ...)`` of cumulative ``buckets`` {upper bound: count}; None without samples.

    As Prometheus estimates it: linear inside the bucket the rank falls in; in the +Inf bucket, the largest
    finite bound.
    """
    bounds = sorted(buckets)
    if not bounds or buckets[bounds[-1]] <= 0:
        return None
    rank = q * buckets[bounds[-1]]
    lower, below = 0.0, 0.0
    for bound in bounds:
        count = buckets[bound]
        if count >= rank:
            if math.isinf(bound):
                return lower
            if count == below:
                return bound
            return lower + (bound - lower) * (rank - below) / (count - below)
        lower, below = bound, count
    return lower


@dataclass(frozen=True)
class Row:
    """One line of the view: a variant's container and model, between two readings."""

    variant: str
    container: str
    model: str
    rps: float
    errors_4xx: float
    errors_5xx: float
    p50: dict[str, float | None]
    p99: dict[str, float | None]


def rows(before: Reading, after: Reading) -> list[Row]:
    """What changed from ``before`` to ``after``, one row per variant, container and model."""
    seconds = max(after.at - before.at, 1e-9)
    keys = sorted(set(after.requests) | {k for k, _ in after.buckets})
    out = []
    for key in keys:
        p50: dict[str, float | None] = {}
        p99: dict[str, float | None] = {}
        for phase in (*PHASES, "total"):
            now = after.buckets.get((key, phase), {})
            then = before.buckets.get((key, phase), {})
            added = {b: c - then.get(b, 0.0) for b, c in now.items()}
            p50[phase], p99[phase] = quantile(0.5, added), quantile(0.99, added)
        out.append(
            Row(
                variant=key[0],
                container=key[1],
                model=key[2],
                rps=(after.requests.get(key, 0.0) - before.requests.get(key, 0.0)) / seconds,
                errors_4xx=after.errors_4xx.get(key, 0.0) - before.errors_4xx.get(key, 0.0),
                errors_5xx=after.errors_5xx.get(key, 0.0) - before.errors_5xx.get(key, 0.0),
                p50=p50,
                p99=p99,
            )
        )
    return out


def workers(reading: Reading) -> list[tuple[str, str, dict[str, float]]]:
    """Per variant and container: queue depth, in flight, busy and ready workers."""
    places: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for (name, variant, container), value in reading.gauges.items():
        places[(variant, container)][name] = value
    return [(v, c, g) for (v, c), g in sorted(places.items())]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.1f}"


def table_lines(found: Iterable[Row], reading: Reading) -> list[str]:
    """The view as plain text lines (what the rich table shows)."""
    lines = [
        "variant/container  model  req/s  4xx  5xx  "
        + "  ".join(f"{p} p50/p99 ms" for p in (*PHASES, "total")),
    ]
    for r in found:
        where = "/".join(x for x in (r.variant, r.container) if x) or "-"
        phases = "  ".join(f"{_ms(r.p50[p])}/{_ms(r.p99[p])}" for p in (*PHASES, "total"))
        lines.append(
            f"{where}  {r.model or '-'}  {r.rps:.1f}  {r.errors_4xx:.0f}  {r.errors_5xx:.0f}  {phases}"
        )
    for variant, container, gauges in workers(reading):
        where = "/".join(x for x in (variant, container) if x) or "-"
        lines.append(
            f"{where}: queue {gauges.get('smkit_queue_depth', 0):.0f}, in flight "
            f"{gauges.get('smkit_requests_in_flight', 0):.0f}, workers busy {gauges.get('smkit_workers_busy', 0):.0f}"
            f" of {gauges.get('smkit_workers:ready', 0):.0f} ready"
        )
    return lines


def render_rich(found: list[Row], reading: Reading, title: str) -> Any:
    """The view as a rich renderable (a table per refresh)."""
    from rich.console import Group
    from rich.table import Table

    table = Table(title=title, expand=False)
    for column in ("variant/container", "model", "req/s", "4xx", "5xx"):
        table.add_column(column, justify="right" if column in ("req/s", "4xx", "5xx") else "left")
    for phase in (*PHASES, "total"):
        table.add_column(f"{phase}\np50/p99 ms", justify="right")
    for r in found:
        where = "/".join(x for x in (r.variant, r.container) if x) or "-"
        table.add_row(
            where,
            r.model or "-",
            f"{r.rps:.1f}",
            f"{r.errors_4xx:.0f}",
            f"{r.errors_5xx:.0f}",
            *(f"{_ms(r.p50[p])}/{_ms(r.p99[p])}" for p in (*PHASES, "total")),
        )
    pool = Table(expand=False)
    for column in ("variant/container", "queue", "in flight", "busy", "ready"):
        pool.add_column(column)
    for variant, container, gauges in workers(reading):
        pool.add_row(
            "/".join(x for x in (variant, container) if x) or "-",
            f"{gauges.get('smkit_queue_depth', 0):.0f}",
            f"{gauges.get('smkit_requests_in_flight', 0):.0f}",
            f"{gauges.get('smkit_workers_busy', 0):.0f}",
            f"{gauges.get('smkit_workers:ready', 0):.0f}",
        )
    return Group(table, pool)
