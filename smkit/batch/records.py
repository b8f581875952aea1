"""Cutting an input object into records and packing records into requests (pure functions).

SageMaker semantics (docs/batch-transform.md):

- SplitType None sends the whole object as one request; SplitType Line makes every line one record and sends
  it *with* its newline (an ``input_fn`` that prints its data shows ``{"value":8}`` and a line break).
- SingleRecord sends one record per request; MultiRecord concatenates as many records as fit in
  MaxPayloadInMB bytes into one body (still newline-separated, so a handler calling ``json.loads`` on it
  fails with "Extra data"). Mini-batches never span input objects.
- A record larger than MaxPayloadInMB fails the object ("Too much data for max payload size").
- AssembleWith None glues the outputs together (``I want to 🍵I want to 🍣...``); Line ends each
  output with one newline.
"""

from __future__ import annotations

from dataclasses import dataclass

from smkit.batch.options import AssembleWith, BatchStrategy, SplitType


class PayloadTooLargeError(ValueError):
    """One record (or, with SplitType None, the whole object) is larger than MaxPayloadInMB."""

    def __init__(self, *, record: int, size: int, limit: int, split_type: SplitType) -> None:
        self.record, self.size, self.limit = record, size, limit
        where = "the whole object" if split_type is SplitType.NONE else f"record {record + 1}"
        hint = (
            "split it with SplitType Line or raise MaxPayloadInMB"
            if split_type is SplitType.NONE
            else "raise MaxPayloadInMB (at most 100) or shorten the record"
        )
        super().__init__(
            f"Too much data for max payload size: {where} is {size:,} bytes and MaxPayloadInMB allows "
            f"{limit:,} bytes; {hint}"
        )


@dataclass(frozen=True)
class MiniBatch:
    """One request: the records it carries (indices ``first`` .. ``first + len(records) - 1``) and its body."""

    first: int
    records: tuple[bytes, ...]
    body: bytes


def split_records(data: bytes, split_type: SplitType) -> list[bytes]:
    """Cut ``data`` into records. Line records keep their ``\\n``; blank lines are not records."""
    if split_type is SplitType.NONE:
        return [data] if data else []
    if split_type is SplitType.LINE:
        return [line for line in data.splitlines(keepends=True) if line.strip()]
    raise ValueError(f"SplitType {split_type} is not emulated locally; use None or Line")


def pack(
    records: list[bytes],
    strategy: BatchStrategy,
    max_bytes: int | None,
    split_type: SplitType = SplitType.LINE,
) -> list[MiniBatch]:
    """Group ``records`` into requests; raise :class:`PayloadTooLargeError` for an oversize record.

    ``max_bytes`` None means no limit (MaxPayloadInMB 0); ``split_type`` only shapes the error message.
    """
    for index, record in enumerate(records):
        if max_bytes is not None and len(record) > max_bytes:
            raise PayloadTooLargeError(record=index, size=len(record), limit=max_bytes, split_type=split_type)
    if strategy is BatchStrategy.SINGLE_RECORD:
        return [MiniBatch(first=i, records=(r,), body=r) for i, r in enumerate(records)]
    batches: list[MiniBatch] = []
    current: list[bytes] = []
    size = 0
    first = 0
    for index, record in enumerate(records):
        piece = _terminated(record)
        if current and max_bytes is not None and size + len(piece) > max_bytes:
            batches.append(_batch(first, current))
            current, size, first = [], 0, index
        current.append(record)
        size += len(piece)
    if current:
        batches.append(_batch(first, current))
    return batches


def _terminated(record: bytes) -> bytes:
    return record if record.endswith(b"\n") else record + b"\n"


def _batch(first: int, records: list[bytes]) -> MiniBatch:
    body = b"".join(_terminated(r) for r in records[:-1]) + records[-1]
    return MiniBatch(first=first, records=tuple(records), body=body)


def assemble(outputs: list[bytes], assemble_with: AssembleWith) -> bytes:
    """Join the outputs of one object in input order.

    With Line, an output that already ends with a newline gets no second one, so a model answering
    ``"0.5\n"`` does not produce blank lines.
    """
    if assemble_with is AssembleWith.NONE:
        return b"".join(outputs)
    return b"".join(_terminated(o) for o in outputs)
