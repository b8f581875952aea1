"""``GET /metrics``: the front end's Prometheus metrics (docs/observability.md).

SageMaker scrapes a container's Prometheus endpoint, ``/metrics`` on port 8080 unless the inference
component's ``ContainerMetricsConfig`` names another path, when the endpoint configuration's
``MetricsConfig.EnableDetailedObservability`` is true
(https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ContainerMetricsConfig.html). The front end
answers it itself, like ``/ping``: every value is already in the front end's memory, so a scrape never
waits on a busy worker.

Where the numbers come from:

- Each worker measures its phases of a request (queue wait, ``input_fn``, ``predict_fn``, ``output_fn``, a
  batch's size) and sends them in the reply's frame (:data:`smkit.serving.wire.ipc.TIMINGS`); the front end
  measures the whole request, a stream's first chunk, and counts what its pool does (worker starts, exits,
  model loads). Workers import nothing for this: they may run in the model's own Python environment,
  which has no ``prometheus_client``.
- The per-request counts go into plain lists (one ``bisect`` and two additions per histogram), exposed at
  scrape time through a ``prometheus_client`` collector: the library's ``Histogram.observe`` costs about
  ten times as much, a measurable share of the front end's CPU per request (``bench/metrics_cost.py``).
  Rare events (worker starts and exits, model loads, streams) use ``prometheus_client``'s own metric
  objects.

Label sets are bounded: ``route`` is one of the runtime's routes (a path it does not serve is
``other``), ``status`` an HTTP status, ``model`` the multi-model ``TargetModel`` (at most
``SMKIT_METRICS_MAX_MODELS`` names, later ones ``_other``; ``""`` for a single model).
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.registry import Collector

from smkit import contract
from smkit.serving.front import lifecycle

if TYPE_CHECKING:
    from smkit.http1 import Request
    from smkit.serving.front.adapters import Adapters
    from smkit.serving.front.pool import WorkerPool
    from smkit.serving.front.sessions import Sessions
    from smkit.serving.wire.reply import Reply

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
# Seconds: from a tenth of a millisecond (a small model's phase) to the 60 s invocation limit and past it
# (a multi-model load may add SAGEMAKER_STARTUP_TIMEOUT).
LATENCY_BUCKETS = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
)  # fmt: skip
LOAD_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
PHASES = ("queue_wait", "input_fn", "predict_fn", "output_fn")
OTHER_MODEL = "_other"
OTHER_ROUTE = "other"
TARGET_MODEL = contract.TARGET_MODEL.lower().encode()
_FIXED_ROUTES = {
    "/invocations": "/invocations",
    "/ping": "/ping",
    "/execution-parameters": "/execution-parameters",
    "/invocations-bidirectional-stream": "/invocations-bidirectional-stream",
    "/models": "/models",
    "/adapters": "/adapters",
}
MAX_CACHED_PATHS = 256


def route_of(path: str, metrics_path: str) -> str:
    """The ``route`` label of ``path``: one of the runtime's routes, or ``other``."""
    route = _FIXED_ROUTES.get(path)
    if route is not None:
        return route
    if path == metrics_path:
        return "/metrics"
    if path.startswith("/models/"):
        return "/models/{name}/invoke" if path.endswith("/invoke") else "/models/{name}"
    if path.startswith("/adapters/"):
        return "/adapters/{name}"
    return OTHER_ROUTE


class _Histogram:
    """Bucket counts and a sum: what one labelled child of a Prometheus histogram holds."""

    __slots__ = ("counts", "total")

    def __init__(self, size: int) -> None:
        self.counts = [0] * (size + 1)  # the last one: above every bound (+Inf)
        self.total = 0.0

    def cumulative(self, bounds: tuple[float, ...]) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = []
        running = 0
        for bound, count in zip((*bounds, math.inf), self.counts, strict=True):
            running += count
            out.append(("+Inf" if bound == math.inf else repr(float(bound)), running))
        return out


class Observed(Protocol):
    """What the metrics read of the front end at scrape time."""

    @property
    def pool(self) -> WorkerPool: ...

    @property
    def sessions(self) -> Sessions | None: ...

    @property
    def adapters(self) -> Adapters: ...


class _Place:
    """The counters of one route and model: answers by status, durations, and the model's phases."""

    __slots__ = ("statuses", "duration", "phases")

    def __init__(self, phases: tuple[_Histogram, ...]) -> None:
        self.statuses: dict[int, int] = {}
        self.duration = _Histogram(len(LATENCY_BUCKETS))
        self.phases = phases


class Metrics(Collector):
    """The front end's metrics: what :class:`~smkit.serving.front.frontend.FrontEnd` and the pool report, and
    ``GET /metrics``.

    Args:
        front: the front end (its pool, sessions and adapters are read at scrape time).
        multi_model: requests are labelled with their ``TargetModel``.
        max_models: distinct ``model`` label values before the rest count as ``_other``.
        path: the path the metrics are served on (``SMKIT_METRICS_PATH``).
    """

    def __init__(self, front: Observed, *, multi_model: bool, max_models: int, path: str) -> None:
        self.front = front
        self.multi_model = multi_model
        self.max_models = max_models
        self.path = path
        self._by_path: dict[str, _Place] = {}  # single model: path -> its route's counters
        self._models: set[str] = set()
        self._places: dict[tuple[str, str], _Place] = {}  # (route, model) -> its counters
        self._phases: dict[str, tuple[_Histogram, ...]] = {}  # model -> one histogram per phase
        self._batches = _Histogram(len(BATCH_BUCKETS))
        self._started = time.monotonic()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)
        registry = self.registry
        self.worker_starts = Counter(
            "smkit_worker_starts",
            "Model worker processes started (first starts and replacements)",
            registry=registry,
        )
        self.worker_exits = Counter(
            "smkit_worker_exits",
            "Model worker processes that exited, by what they were doing (loading, serving, stopping)",
            ["during"],
            registry=registry,
        )
        self.worker_restarts = Counter(
            "smkit_worker_restarts",
            "Replacement workers started after an exit or a failed load",
            registry=registry,
        )
        self.model_load_seconds = Histogram(
            "smkit_model_load_seconds",
            "Seconds a worker took to load the model (import the handler, model_fn, model_warmup_fn)",
            buckets=LOAD_BUCKETS,
            registry=registry,
        )
        self.worker_ready_seconds = Histogram(
            "smkit_worker_ready_seconds",
            "Seconds from a worker process's start to its model being loaded (interpreter start included)",
            buckets=LOAD_BUCKETS,
            registry=registry,
        )
        self.model_load_failures = Counter(
            "smkit_model_load_failures",
            "Failed model loads (model_fn raised or the worker died)",
            registry=registry,
        )
        self.stream_first_chunk = Histogram(
            "smkit_stream_first_chunk_seconds",
            "Seconds from a streamed request's arrival to its first chunk",
            ["model"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.stream_errors = Counter(
            "smkit_stream_errors",
            "Streamed answers cut off before their end (handler error, timeout, client gone)",
            ["model"],
            registry=registry,
        )

    # -- the hot path: one call per answered request ----------------------------------------------------
    def record(self, request: Request, status: int, timings: Any, duration: float) -> None:
        """Count one answered request: ``status``, its ``duration`` (s) and the worker's ``timings``.

        Written out rather than looped: it runs on every request (``bench/metrics_instructions.py``).
        """
        if self.multi_model:
            place = self._place(request.path, self.model_of(request))
        else:
            place = self._by_path.get(request.path) or self._place(request.path, "")
        statuses = place.statuses
        statuses[status] = statuses.get(status, 0) + 1
        hist = place.duration
        hist.counts[bisect_left(LATENCY_BUCKETS, duration)] += 1
        hist.total += duration
        if timings is None:
            return
        waited, decoded, predicted, encoded, batch = timings
        wait, inputs, predict, output = place.phases
        if waited == waited:  # not NaN: the phase ran
            wait.counts[bisect_left(LATENCY_BUCKETS, waited)] += 1
            wait.total += waited
        if decoded == decoded:
            inputs.counts[bisect_left(LATENCY_BUCKETS, decoded)] += 1
            inputs.total += decoded
        if predicted == predicted:
            predict.counts[bisect_left(LATENCY_BUCKETS, predicted)] += 1
            predict.total += predicted
        if encoded == encoded:
            output.counts[bisect_left(LATENCY_BUCKETS, encoded)] += 1
            output.total += encoded
        if batch:
            self._batches.counts[bisect_left(BATCH_BUCKETS, batch)] += 1
            self._batches.total += batch

    def _place(self, path: str, model: str) -> _Place:
        """The counters of ``path``'s route and ``model`` (made on first use; looked up by path after)."""
        key = (route_of(path, self.path), model)
        place = self._places.get(key)
        if place is None:
            phases = self._phases.get(model)
            if phases is None:
                phases = self._phases[model] = tuple(_Histogram(len(LATENCY_BUCKETS)) for _ in PHASES)
            place = self._places[key] = _Place(phases)
        if not model and len(self._by_path) < MAX_CACHED_PATHS:
            self._by_path[path] = place
        return place

    def model_of(self, request: Request) -> str:
        """The request's ``TargetModel`` (header, or ``/models/{name}/invoke``), bounded."""
        name = ""
        for key, value in request.headers:
            if key == TARGET_MODEL:
                name = value.decode("utf-8", "replace")
                break
        if not name and request.path.startswith("/models/") and request.path.endswith("/invoke"):
            name = request.path[len("/models/") : -len("/invoke")]
        if not name or name in self._models:
            return name
        if len(self._models) >= self.max_models:
            return OTHER_MODEL
        self._models.add(name)
        return name

    # -- events of the pool (smkit/serving/front/pool.py) --------------------------------------------------------
    def worker_started(self, restart: bool) -> None:
        self.worker_starts.inc()
        if restart:
            self.worker_restarts.inc()

    def worker_exited(self, during: str) -> None:
        self.worker_exits.labels(during).inc()

    def worker_loaded(self, load_seconds: float | None, since_start: float) -> None:
        if load_seconds is not None:
            self.model_load_seconds.observe(load_seconds)
        self.worker_ready_seconds.observe(since_start)

    def load_failed(self) -> None:
        self.model_load_failures.inc()

    def stream_started(self, request: Request, seconds: float) -> None:
        self.stream_first_chunk.labels(self.model_of(request) if self.multi_model else "").observe(seconds)

    def stream_failed(self, request: Request) -> None:
        self.stream_errors.labels(self.model_of(request) if self.multi_model else "").inc()

    # -- scrape ----------------------------------------------------------------------------------------
    def scrape(self) -> Reply:
        """The reply of ``GET /metrics``."""
        from smkit.serving.wire.reply import Reply

        return Reply(200, generate_latest(self.registry), CONTENT_TYPE)

    def collect(self) -> Iterator[Any]:
        """The per-request families and the gauges read now (``prometheus_client``'s Collector)."""
        requests = CounterMetricFamily(
            "smkit_requests",
            "Requests answered, by route, HTTP status and model",
            labels=["route", "status", "model"],
        )
        for (route, model), place in sorted(self._places.items()):
            for status, count in sorted(place.statuses.items()):
                requests.add_metric([route, str(status), model], count)
        yield requests
        yield self._family(
            "smkit_request_duration_seconds",
            "Seconds from a request's arrival (its body read) to its answer (a stream: its last chunk)",
            ["route", "model"],
            {key: place.duration for key, place in self._places.items()},
            LATENCY_BUCKETS,
        )
        yield self._family(
            "smkit_request_phase_seconds",
            "Seconds of each phase in the worker: queue_wait (arrival to the worker taking it), input_fn, "
            "predict_fn (transform_fn, or a batch's predict_batch_fn), output_fn",
            ["phase", "model"],
            {
                (phase, model): hist
                for model, hists in self._phases.items()
                for phase, hist in zip(PHASES, hists, strict=True)
                if hist.total or any(hist.counts)
            },
            LATENCY_BUCKETS,
        )
        batches = HistogramMetricFamily(
            "smkit_batch_size", "Requests per predict_batch_fn call (dynamic batching)"
        )
        batches.add_metric(
            [], self._batches.cumulative(tuple(float(b) for b in BATCH_BUCKETS)), self._batches.total
        )
        yield batches
        yield from self._gauges()

    @staticmethod
    def _family(
        name: str,
        doc: str,
        labels: list[str],
        values: dict[tuple[str, str], _Histogram],
        bounds: tuple[float, ...],
    ) -> HistogramMetricFamily:
        family = HistogramMetricFamily(name, doc, labels=labels)
        for key, hist in sorted(values.items()):
            family.add_metric(list(key), hist.cumulative(bounds), hist.total)
        return family

    def _gauges(self) -> Iterator[Any]:
        pool = self.front.pool
        running = busy = 0  # requests running (a batch's each), workers running any
        for worker in pool.workers:
            if worker is None:
                continue
            before = running
            for place in pool.board_slots(worker.slot):  # one per request it may run at once
                if pool.board.running(place)[0]:
                    running += (1 + len(pool.board.held(place))) if pool.board.extra else 1
            busy += running > before
        in_flight = len(pool.jobs)
        yield GaugeMetricFamily(
            "smkit_requests_in_flight", "Requests queued or running in a worker now", value=in_flight
        )
        yield GaugeMetricFamily(
            "smkit_queue_depth", "Requests waiting for a free worker now", value=max(0, in_flight - running)
        )
        yield GaugeMetricFamily(
            "smkit_queue_capacity", "Requests that may wait for a free worker (SMKIT_QUEUE_SIZE)",
            value=pool.options.queue_size,
        )  # fmt: skip
        workers = GaugeMetricFamily("smkit_workers", "Model worker slots by state", labels=["state"])
        states = {
            state: 0 for state in (lifecycle.STARTING, lifecycle.READY, lifecycle.RETRYING, lifecycle.GAVE_UP)
        }
        for slot in pool.life.slots:
            states[slot.state] = states.get(slot.state, 0) + 1
        for state, count in states.items():
            workers.add_metric([state.replace(" ", "_")], count)
        yield workers
        yield GaugeMetricFamily("smkit_workers_busy", "Workers running a request now", value=busy)
        sessions = self.front.sessions
        if sessions is not None:
            yield GaugeMetricFamily(
                "smkit_sessions_open", "Stateful sessions open now", value=len(sessions.table)
            )
        if pool.pinning.any_adapters:
            yield GaugeMetricFamily(
                "smkit_adapters_registered", "Adapters registered now", value=len(self.front.adapters.names)
            )
        yield GaugeMetricFamily(
            "smkit_uptime_seconds",
            "Seconds since the front end started",
            value=time.monotonic() - self._started,
        )
