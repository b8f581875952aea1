"""Running a transform job against a serving container: split, invoke, join, assemble, write.

Each input object is processed on its own: its records are packed into requests (never mixed with another
object's), the requests run MaxConcurrentTransforms at a time, outputs are put back in input order, and
``<name>.out`` is written only when every request of that object succeeded. A failed object gets no ``.out``
and a log in the shape SageMaker writes to ``/aws/sagemaker/TransformJobs``::

    [sagemaker logs]: s3://bucket/in/testdata2.jsonl: Bad HTTP status received from algorithm: 500
    [sagemaker logs]: s3://bucket/in/testdata2.jsonl:
    [sagemaker logs]: s3://bucket/in/testdata2.jsonl: Message:
    [sagemaker logs]: s3://bucket/in/testdata2.jsonl: Extra data: line 2 column 1 (char 12)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from smkit.batch.client import ContainerClient, InvocationError
from smkit.batch.dataprocessing import DataProcessingError, DataProcessor, build_processor, split_output
from smkit.batch.objects import OUTPUT_SUFFIX, InputObject, Sink, StorageError
from smkit.batch.options import ResolvedOptions
from smkit.batch.records import MiniBatch, PayloadTooLargeError, assemble, pack, split_records

Log = Callable[[str], None]


@dataclass
class ObjectResult:
    """What happened to one input object."""

    source: str
    output: str | None = None
    records: int = 0
    requests: int = 0
    status: int | None = None
    error: str | None = None
    message: str | None = None

    @property
    def ok(self) -> bool:
        """True when the ``.out`` was written."""
        return self.error is None

    @property
    def headline(self) -> str:
        """One line for the summary: where the output went, or why there is none."""
        if self.ok:
            return self.output or ""
        if self.status is not None:
            return _first_line(f"algorithm answered HTTP {self.status}: {_first_line(self.message or '')}")
        return _first_line(self.error or "")


@dataclass
class JobResult:
    """Every object's outcome; the job failed when any object did."""

    banner: str
    objects: list[ObjectResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when every input object produced its ``.out``."""
        return all(o.ok for o in self.objects)

    def summary(self) -> str:
        """A short table: one row per object, then the totals."""
        width = max([len(o.source) for o in self.objects] + [6])
        rows = [f"{'input':<{width}}  {'status':<9} {'records':>8} {'requests':>8}  output / error"]
        for o in self.objects:
            state = "Completed" if o.ok else "Failed"
            rows.append(f"{o.source:<{width}}  {state:<9} {o.records:>8} {o.requests:>8}  {o.headline}")
        failed = sum(not o.ok for o in self.objects)
        verdict = "Completed" if self.ok else f"Failed ({failed} of {len(self.objects)} input objects failed)"
        rows.append(f"Transform job {verdict} in {self.seconds:.2f} s; {self.banner}")
        return "\n".join(rows)


def _first_line(text: str) -> str:
    line = next((line for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= 120 else line[:117] + "..."


@dataclass
class TransformRunner:
    """Runs resolved options against one container; ``log`` receives SageMaker-style log lines."""

    client: ContainerClient
    resolved: ResolvedOptions
    sink: Sink
    log: Log = print
    processor: DataProcessor = field(init=False)

    def __post_init__(self) -> None:
        self.processor = build_processor(self.resolved.options)

    def run(self, inputs: list[InputObject]) -> JobResult:
        """Transform every object in ``inputs``; never raises for a per-object failure."""
        started = time.monotonic()
        result = JobResult(banner=self.resolved.banner())
        self._log(self.resolved.banner())
        with ThreadPoolExecutor(
            max_workers=self.resolved.max_concurrent_transforms, thread_name_prefix="transform"
        ) as pool:
            for obj in inputs:
                result.objects.append(self._transform_object(obj, pool))
        result.seconds = time.monotonic() - started
        return result

    def _transform_object(self, obj: InputObject, pool: ThreadPoolExecutor) -> ObjectResult:
        outcome = ObjectResult(source=obj.uri)
        name = obj.name + OUTPUT_SUFFIX
        try:
            body = self._transform(obj, pool, outcome)
            outcome.output = self.sink.write(name, body)
        except InvocationError as exc:
            outcome.status, outcome.error, outcome.message = exc.status, str(exc), exc.message
            if exc.records:
                outcome.error += f"\n(the failed request carried {exc.records})"
        except (PayloadTooLargeError, DataProcessingError, StorageError) as exc:
            outcome.error = str(exc)
        if outcome.error is not None:
            for line in outcome.error.splitlines() or [""]:
                self._log(f"{obj.uri}: {line}")
            try:
                if self.sink.discard(name):
                    self._log(f"{obj.uri}: removed {name} left by an earlier run")
            except StorageError as exc:
                self._log(f"{obj.uri}: {exc}")
        return outcome

    def _transform(self, obj: InputObject, pool: ThreadPoolExecutor, outcome: ObjectResult) -> bytes:
        options = self.resolved.options
        records = split_records(obj.read(), options.split_type)
        outcome.records = len(records)
        prepared = [self.processor.prepare(record, i) for i, record in enumerate(records)]
        batches = pack(
            prepared, self.resolved.batch_strategy, self.resolved.max_payload_bytes, options.split_type
        )
        futures = [
            pool.submit(self.client.invoke, batch.body, options.content_type, options.accept)
            for batch in batches
        ]
        outcome.requests = len(batches)
        outputs: list[bytes] = []
        try:
            for batch, future in zip(batches, futures, strict=True):
                try:
                    outputs.extend(self._collect(batch, future, records))
                except InvocationError as exc:
                    last = batch.first + len(batch.records)
                    exc.records = f"records {batch.first + 1}-{last} of {len(records)}"
                    raise
        finally:
            for future in futures:
                future.cancel()
        return assemble(outputs, options.assemble_with)

    def _collect(self, batch: MiniBatch, future: Future[bytes], records: list[bytes]) -> list[bytes]:
        output = future.result()
        if not self.processor.touches_output:
            return [output]
        pieces = split_output(output, len(batch.records), batch.first)
        return [
            self.processor.finish(records[batch.first + k], piece, batch.first + k)
            for k, piece in enumerate(pieces)
        ]

    def _log(self, message: str) -> None:
        self.log(f"[sagemaker logs]: {message}")
