"""The invocation metrics SageMaker publishes, published by the local endpoint to the emulated CloudWatch.

SageMaker publishes per endpoint and variant, in namespace ``AWS/SageMaker`` with dimensions
``EndpointName`` and ``VariantName``: ``Invocations`` (Count), ``Invocation4XXErrors`` and
``Invocation5XXErrors`` (Count), ``ModelLatency`` and ``OverheadLatency`` (Microseconds) and, for a
serverless endpoint, ``ModelSetupTime`` (Microseconds)
(https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html). With
``LocalSettings.cloudwatch_endpoint_url`` set (moto's server: ``smkit local-endpoint --cloudwatch-endpoint-url``
or the emulator's URL) the local endpoint records each invocation in memory and a background thread sends
them with PutMetricData every ``interval_s`` seconds, one statistic set per metric and variant, so an
invocation never waits on CloudWatch. docs/observability.md says what the emulator then does with them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from smkit.aws.limits import MAX_METRIC_DATA_PER_CALL

NAMESPACE = "AWS/SageMaker"
MICROSECONDS = "Microseconds"
COUNT = "Count"
UNITS = {
    "Invocations": COUNT,
    "Invocation4XXErrors": COUNT,
    "Invocation5XXErrors": COUNT,
    "ModelLatency": MICROSECONDS,
    "OverheadLatency": MICROSECONDS,
    "ModelSetupTime": MICROSECONDS,
}
FLUSH_INTERVAL_S = 5.0


@dataclass
class _Stats:
    count: int = 0
    total: float = 0.0
    low: float = float("inf")
    high: float = float("-inf")

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        self.low = min(self.low, value)
        self.high = max(self.high, value)


@dataclass
class InvocationMetrics:
    """Collects invocations per variant and publishes them from its own thread (:meth:`start`/:meth:`stop`)."""

    endpoint: str
    endpoint_url: str
    region: str
    interval_s: float = FLUSH_INTERVAL_S
    _pending: dict[tuple[str, str], _Stats] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _wake: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _client: Any = None
    published: int = 0  # datums sent so far
    last_error: str | None = None

    def record(self, variant: str, *, status: int, model_us: float | None, overhead_us: float) -> None:
        """One answered invocation: its HTTP status class and where its time went (in the request path:
        a dictionary update under a lock, nothing else)."""
        with self._lock:
            self._add(variant, "Invocations", 1.0)
            self._add(variant, "Invocation4XXErrors", 1.0 if 400 <= status < 500 else 0.0)
            self._add(variant, "Invocation5XXErrors", 1.0 if status >= 500 else 0.0)
            if model_us is not None:
                self._add(variant, "ModelLatency", model_us)
            self._add(variant, "OverheadLatency", overhead_us)

    def record_setup(self, variant: str, setup_us: float) -> None:
        """A serverless variant's cold start: ``ModelSetupTime``."""
        with self._lock:
            self._add(variant, "ModelSetupTime", setup_us)

    def _add(self, variant: str, metric: str, value: float) -> None:
        stats = self._pending.get((variant, metric))
        if stats is None:
            stats = self._pending[(variant, metric)] = _Stats()
        stats.add(value)

    def start(self) -> None:
        import boto3  # the `local` extra

        self._client = boto3.client(
            "cloudwatch",
            endpoint_url=self.endpoint_url,
            region_name=self.region,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        self._wake.clear()
        self._thread = threading.Thread(target=self._run, name=f"cloudwatch-{self.endpoint}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Flush what is pending and end the thread."""
        if self._thread is None:
            return
        self._wake.set()
        self._thread.join()
        self._thread = None

    def _run(self) -> None:
        while not self._wake.wait(self.interval_s):
            self.flush()
        self.flush()

    def _datums(self) -> Iterator[dict[str, Any]]:
        with self._lock:
            pending, self._pending = self._pending, {}
        now = datetime.now(UTC)
        for (variant, metric), s in pending.items():
            yield {
                "MetricName": metric,
                "Dimensions": [
                    {"Name": "EndpointName", "Value": self.endpoint},
                    {"Name": "VariantName", "Value": variant},
                ],
                "Timestamp": now,
                "StatisticValues": {
                    "SampleCount": s.count,
                    "Sum": s.total,
                    "Minimum": s.low,
                    "Maximum": s.high,
                },
                "Unit": UNITS[metric],
            }

    def flush(self) -> None:
        """Send what was recorded since the last flush (an unreachable CloudWatch loses it, and says why in
        :attr:`last_error`; serving goes on)."""
        datums = list(self._datums())
        for i in range(0, len(datums), MAX_METRIC_DATA_PER_CALL):
            try:
                self._client.put_metric_data(
                    Namespace=NAMESPACE, MetricData=datums[i : i + MAX_METRIC_DATA_PER_CALL]
                )
            except Exception as exc:  # noqa: BLE001 - reported, never raised into serving
                self.last_error = f"PutMetricData to {self.endpoint_url} failed: {exc}"
                continue
            self.published += len(datums[i : i + MAX_METRIC_DATA_PER_CALL])
