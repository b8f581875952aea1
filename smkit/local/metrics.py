"""``GET /endpoints/NAME/metrics`` of the local endpoint: every container's Prometheus metrics, as SageMaker
scrapes them (docs/observability.md).

With ``MetricsConfig.EnableDetailedObservability`` SageMaker scrapes each container's Prometheus endpoint
(``/metrics`` on port 8080 unless an inference component's ContainerMetricsConfig names another path) and
publishes the samples with the dimensions of where they came from
(https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ContainerMetricsConfig.html). Locally each
running container is read on the path its environment names (``SMKIT_METRICS_PATH``, else ``/metrics``),
and every sample gets the labels ``variant``, ``container`` (and ``inference_component`` for a component's
container), so one text holds the whole endpoint: what ``smkit top`` reads. A container that does not
answer (starting, stopped, no metrics) is left out; the text says so in a comment.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

from smkit.contract import SMKIT_METRICS_PATH

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
DEFAULT_PATH = "/metrics"
READ_TIMEOUT_S = 2.0  # a scrape never waits longer for one container
MAX_METRICS_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Target:
    """One container to read: its port and metrics path, and the labels its samples get."""

    labels: Mapping[str, str]
    port: int | None
    environment: Mapping[str, str]

    @property
    def path(self) -> str:
        return self.environment.get(SMKIT_METRICS_PATH) or DEFAULT_PATH


async def read(port: int, path: str, timeout: float = READ_TIMEOUT_S) -> str | None:
    """``GET path`` of the container on ``port`` (HTTP/1.0: the body ends with the connection); None when
    it does not answer 200 in time."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), timeout)
    except (OSError, TimeoutError):
        return None
    try:
        writer.write(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
        data = await asyncio.wait_for(reader.read(MAX_METRICS_BYTES), timeout)
    except (OSError, TimeoutError):
        return None
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    if not head.startswith((b"HTTP/1.1 200", b"HTTP/1.0 200")):
        return None
    return body.decode("utf-8", "replace")


class _Relabelled(Collector):
    def __init__(self, families: Sequence[tuple[Mapping[str, str], str]]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        merged: dict[str, Metric] = {}
        for labels, text in self.families:
            for family in text_string_to_metric_families(text):
                into = merged.get(family.name)
                if into is None:
                    into = merged[family.name] = Metric(
                        family.name, family.documentation, family.type, family.unit
                    )
                for s in family.samples:
                    into.samples.append(
                        Sample(s.name, {**s.labels, **labels}, s.value, s.timestamp, s.exemplar)
                    )
        yield from merged.values()


async def endpoint_metrics(targets: Iterable[Target]) -> bytes:
    """The metrics of every target, each sample labelled with where it came from."""
    targets = list(targets)
    texts = await asyncio.gather(*(read(t.port, t.path) if t.port is not None else _none() for t in targets))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Relabelled([(t.labels, text) for t, text in zip(targets, texts, strict=True) if text]))
    missing = [
        ",".join(f"{k}={v}" for k, v in t.labels.items())
        for t, text in zip(targets, texts, strict=True)
        if not text
    ]
    note = b"".join(f"# not read: {m}\n".encode() for m in missing)
    return note + generate_latest(registry)


async def _none() -> None:
    return None
