"""DataProcessing: InputFilter -> model -> JoinSource -> OutputFilter, per record (pure functions).

https://docs.aws.amazon.com/sagemaker/latest/dg/batch-transform-data-processing.html and docs/batch-transform.md:

- JSON records are parsed as JSON. A join puts the output under ``SageMakerOutput`` in the input object, or
  builds ``{"SageMakerInput": ..., "SageMakerOutput": ...}`` when the input is not an object. Joined and
  filtered JSON is written compactly with non-ASCII kept, as SageMaker writes it
  (``{"SageMakerOutput":{"output":"I want to 🍵"},"value":1}``).
- CSV rows are read as JSON arrays of strings, so ``$[1:]`` drops the first column; a join appends the
  output's columns to the input row.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from smkit.batch.jsonpath import FilterError, JsonPathFilter, compile_filter
from smkit.batch.options import JoinSource, TransformOptions, content_family


class DataProcessingError(ValueError):
    """A record or a model output that a filter or join cannot handle."""


def _json_parse(data: bytes) -> Any:
    return json.loads(data.decode("utf-8"))


def _json_dump(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _json_join(record: Any, output: Any) -> Any:
    if isinstance(record, dict):
        return {"SageMakerOutput": output, **{k: v for k, v in record.items() if k != "SageMakerOutput"}}
    return {"SageMakerInput": record, "SageMakerOutput": output}


def _csv_parse(data: bytes) -> list[Any]:
    rows = csv.reader(io.StringIO(data.decode("utf-8")))
    return [cell for row in rows for cell in row]


def _csv_dump(value: Any) -> bytes:
    buffer = io.StringIO()
    cells = value if isinstance(value, list) else [value]
    csv.writer(buffer, lineterminator="").writerow(
        [json.dumps(c, separators=(",", ":")) if isinstance(c, dict | list) else c for c in cells]
    )
    return buffer.getvalue().encode("utf-8")


def _csv_join(record: Any, output: Any) -> Any:
    head = record if isinstance(record, list) else [record]
    return [*head, *(output if isinstance(output, list) else [output])]


@dataclass(frozen=True)
class RecordCodec:
    """How one content family parses, writes and joins a record."""

    family: str
    parse: Callable[[bytes], Any]
    dump: Callable[[Any], bytes]
    join: Callable[[Any, Any], Any]


CODECS: dict[str, RecordCodec] = {
    "json": RecordCodec("json", _json_parse, _json_dump, _json_join),
    "csv": RecordCodec("csv", _csv_parse, _csv_dump, _csv_join),
}


@dataclass(frozen=True)
class DataProcessor:
    """The per-record steps a job's DataProcessing asks for; build it with :func:`build_processor`."""

    input_codec: RecordCodec | None
    output_codec: RecordCodec | None
    input_filter: JsonPathFilter
    output_filter: JsonPathFilter
    join: bool

    @property
    def touches_output(self) -> bool:
        """True when model outputs are parsed (join or output filter) rather than copied byte for byte."""
        return self.join or not self.output_filter.is_identity

    def prepare(self, record: bytes, number: int) -> bytes:
        """Apply InputFilter to one record; a Line record keeps its newline."""
        if self.input_filter.is_identity or self.input_codec is None:
            return record
        value = self._parse(self.input_codec, record, number, "input record")
        try:
            selected = self.input_filter.apply(value)
        except FilterError as exc:
            raise DataProcessingError(f"InputFilter on record {number + 1}: {exc}") from exc
        body = self.input_codec.dump(selected)
        return body + b"\n" if record.endswith(b"\n") else body

    def finish(self, record: bytes, output: bytes, number: int) -> bytes:
        """Join one model output to its input record and apply OutputFilter; no line terminator."""
        if not self.touches_output or self.output_codec is None:
            return output
        value = self._parse(self.output_codec, output, number, "model output")
        if self.join and self.input_codec is not None:
            value = self.input_codec.join(
                self._parse(self.input_codec, record, number, "input record"), value
            )
        try:
            value = self.output_filter.apply(value)
        except FilterError as exc:
            raise DataProcessingError(f"OutputFilter on record {number + 1}: {exc}") from exc
        return self.output_codec.dump(value)

    @staticmethod
    def _parse(codec: RecordCodec, data: bytes, number: int, what: str) -> Any:
        try:
            return codec.parse(data)
        except (ValueError, UnicodeDecodeError, csv.Error) as exc:
            preview = data[:80].decode("utf-8", "replace").strip()
            raise DataProcessingError(
                f"{what} {number + 1} is not valid {codec.family.upper()} ({exc}): {preview!r}"
            ) from exc


def build_processor(options: TransformOptions) -> DataProcessor:
    """The processor for validated ``options`` (see :func:`smkit.batch.options.validate`)."""
    input_family = content_family(options.content_type)
    join = options.join_source is JoinSource.INPUT
    output_family = input_family if join else content_family(options.accept)
    return DataProcessor(
        input_codec=CODECS.get(input_family) if input_family else None,
        output_codec=CODECS.get(output_family) if output_family else None,
        input_filter=compile_filter(options.input_filter or "$"),
        output_filter=compile_filter(options.output_filter or "$"),
        join=join,
    )


def split_output(output: bytes, count: int, first: int) -> list[bytes]:
    """Cut a MultiRecord response into one output per record (one line each).

    With a join or an output filter SageMaker must pair outputs with records, so the model has to answer
    with exactly one line per record it was sent.
    """
    if count == 1:
        return [output]
    lines = [line for line in output.splitlines() if line.strip()]
    if len(lines) != count:
        raise DataProcessingError(
            f"the model answered records {first + 1}-{first + count} with {len(lines)} lines; "
            f"to join or filter MultiRecord outputs it must return one line per record ({count})"
        )
    return lines
