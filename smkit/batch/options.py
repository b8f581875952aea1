"""Transform job options, named and checked as CreateTransformJob does.

Every option mirrors a CreateTransformJob field
(https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateTransformJob.html).
:func:`validate` collects every incompatibility and raises them together, each naming the option, the bad
value and the fix.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from smkit.aws.limits import (
    DEFAULT_INVOCATIONS_TIMEOUT_S,
    DEFAULT_MAX_CONCURRENT_TRANSFORMS,
    FILTER_MAX_LENGTH,
    INVOCATIONS_TIMEOUT_RANGE_S,
    MAX_INVOCATIONS_RETRIES,
)
from smkit.contract import (
    BATCH_DEFAULT_MAX_PAYLOAD_MB,
    BATCH_MAX_PAYLOAD_MB,
    CSV,
    JSON,
    JSON_LINES,
    media_type,
)


class SplitType(enum.StrEnum):
    """TransformInput.SplitType: how an input object is cut into records."""

    NONE = "None"
    LINE = "Line"
    RECORDIO = "RecordIO"
    TFRECORD = "TFRecord"


class BatchStrategy(enum.StrEnum):
    """BatchStrategy: one record per request, or as many as fit in MaxPayloadInMB."""

    SINGLE_RECORD = "SingleRecord"
    MULTI_RECORD = "MultiRecord"


class AssembleWith(enum.StrEnum):
    """TransformOutput.AssembleWith: concatenate outputs, or end each with a newline."""

    NONE = "None"
    LINE = "Line"


class JoinSource(enum.StrEnum):
    """DataProcessing.JoinSource: join each output to its input record."""

    NONE = "None"
    INPUT = "Input"


class CompressionType(enum.StrEnum):
    """TransformInput.CompressionType: Gzip inputs are decompressed before splitting."""

    NONE = "None"
    GZIP = "Gzip"


# Limits from docs/hosting-contract.md and docs/batch-transform.md and the CreateTransformJob API reference.
DEFAULT_MAX_PAYLOAD_MB = BATCH_DEFAULT_MAX_PAYLOAD_MB
MAX_PAYLOAD_MB_LIMIT = BATCH_MAX_PAYLOAD_MB
CONCURRENCY_X_PAYLOAD_LIMIT = BATCH_MAX_PAYLOAD_MB
MEGABYTE = 1024 * 1024

# Content types DataProcessing can parse, by family (batch-transform-data-processing.html: JSON and CSV only).
CONTENT_FAMILIES: dict[str, str] = {
    JSON: "json",
    JSON_LINES: "json",
    "application/x-jsonlines": "json",
    CSV: "csv",
}
# Families whose records are lines, so filters and joins need SplitType=Line and AssembleWith=Line.
LINE_ORIENTED = {JSON_LINES, "application/x-jsonlines", CSV}
LOCAL_SPLIT_TYPES = (SplitType.NONE, SplitType.LINE)


def content_family(content_type: str | None) -> str | None:
    """``json`` or ``csv`` for the types DataProcessing understands, else None."""
    bare = media_type(content_type)
    return CONTENT_FAMILIES.get(bare) if bare else None


class TransformOptionsError(ValueError):
    """Incompatible or out-of-range transform options; ``problems`` lists each one."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("invalid transform options:\n" + "\n".join(f"  - {p}" for p in problems))


@dataclass(frozen=True)
class TransformOptions:
    """The job options as the user gave them; ``None`` means "not set" (the container or AWS decides).

    Field names follow CreateTransformJob: ``max_payload_mb`` is MaxPayloadInMB, ``split_type`` is
    TransformInput.SplitType, ``input_filter`` is DataProcessing.InputFilter, and so on.
    """

    content_type: str | None = None
    accept: str | None = None
    split_type: SplitType = SplitType.NONE
    compression_type: CompressionType = CompressionType.NONE
    batch_strategy: BatchStrategy | None = None
    max_payload_mb: int | None = None
    max_concurrent_transforms: int | None = None
    assemble_with: AssembleWith = AssembleWith.NONE
    input_filter: str | None = None
    output_filter: str | None = None
    join_source: JoinSource = JoinSource.NONE
    invocations_timeout_s: int = DEFAULT_INVOCATIONS_TIMEOUT_S
    invocations_max_retries: int = MAX_INVOCATIONS_RETRIES

    @property
    def processes_data(self) -> bool:
        """True when records must be parsed: a non-trivial filter or a join."""
        return (
            self.join_source is JoinSource.INPUT
            or _is_filter(self.input_filter)
            or _is_filter(self.output_filter)
        )


@dataclass(frozen=True)
class ResolvedOptions:
    """Options with every value decided: what a local job actually runs with."""

    options: TransformOptions
    batch_strategy: BatchStrategy
    max_payload_mb: int
    max_concurrent_transforms: int

    @property
    def max_payload_bytes(self) -> int | None:
        """MaxPayloadInMB in bytes (1 MB = 1,048,576 bytes); None when 0 (no limit)."""
        return self.max_payload_mb * MEGABYTE if self.max_payload_mb else None

    def banner(self) -> str:
        """The line SageMaker logs when a job starts."""
        strategy = "MULTI_RECORD" if self.batch_strategy is BatchStrategy.MULTI_RECORD else "SINGLE_RECORD"
        return (
            f"MaxConcurrentTransforms={self.max_concurrent_transforms}, "
            f"MaxPayloadInMB={self.max_payload_mb}, BatchStrategy={strategy}"
        )


def _is_filter(expression: str | None) -> bool:
    return expression is not None and expression.strip() not in ("", "$")


def resolve(options: TransformOptions, execution_parameters: dict[str, object] | None) -> ResolvedOptions:
    """Fill unset options from the container's ``GET /execution-parameters`` answer, then AWS defaults.

    SageMaker asks the container for these values when the job leaves them unset (docs/hosting-contract.md).
    """
    params = execution_parameters or {}
    strategy = options.batch_strategy
    if strategy is None:
        raw = str(params.get("BatchStrategy", "")).replace("_", "").lower()
        strategy = BatchStrategy.MULTI_RECORD if raw == "multirecord" else BatchStrategy.SINGLE_RECORD
        if options.split_type is SplitType.NONE:
            strategy = BatchStrategy.SINGLE_RECORD
    payload = options.max_payload_mb
    if payload is None:
        payload = _int_param(params, "MaxPayloadInMB", DEFAULT_MAX_PAYLOAD_MB, 0, MAX_PAYLOAD_MB_LIMIT)
    concurrency = options.max_concurrent_transforms
    if concurrency is None:
        concurrency = _int_param(
            params,
            "MaxConcurrentTransforms",
            DEFAULT_MAX_CONCURRENT_TRANSFORMS,
            1,
            CONCURRENCY_X_PAYLOAD_LIMIT,
        )
    if payload and concurrency * payload > CONCURRENCY_X_PAYLOAD_LIMIT:
        concurrency = max(1, CONCURRENCY_X_PAYLOAD_LIMIT // payload)
    return ResolvedOptions(
        options=options,
        batch_strategy=strategy,
        max_payload_mb=payload,
        max_concurrent_transforms=concurrency,
    )


def _int_param(params: dict[str, object], key: str, default: int, low: int, high: int) -> int:
    """The container's value for ``key`` when it is a whole number in [low, high], else ``default``."""
    value = params.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
        return value
    return default


def validate(options: TransformOptions, *, local: bool) -> None:
    """Raise :class:`TransformOptionsError` listing every problem with ``options``.

    ``local`` adds the limits of the local emulation (RecordIO / TFRecord splitting is not emulated).
    """
    problems: list[str] = []
    for check in _CHECKS:
        problems.extend(check(options, local))
    if problems:
        raise TransformOptionsError(problems)


def _check_ranges(o: TransformOptions, local: bool) -> list[str]:
    out: list[str] = []
    if o.max_payload_mb is not None and not 0 <= o.max_payload_mb <= MAX_PAYLOAD_MB_LIMIT:
        out.append(
            f"MaxPayloadInMB {o.max_payload_mb} is out of range: it must be 0-"
            f"{MAX_PAYLOAD_MB_LIMIT} (default {DEFAULT_MAX_PAYLOAD_MB})"
        )
    if o.max_concurrent_transforms is not None and o.max_concurrent_transforms < 1:
        out.append(f"MaxConcurrentTransforms {o.max_concurrent_transforms} is out of range: use 1 or more")
    payload = o.max_payload_mb if o.max_payload_mb is not None else DEFAULT_MAX_PAYLOAD_MB
    concurrency = o.max_concurrent_transforms or DEFAULT_MAX_CONCURRENT_TRANSFORMS
    if payload * concurrency > CONCURRENCY_X_PAYLOAD_LIMIT:
        out.append(
            f"MaxConcurrentTransforms {concurrency} x MaxPayloadInMB {payload} = {payload * concurrency}"
            f" exceeds {CONCURRENCY_X_PAYLOAD_LIMIT}: SageMaker requires their product <= "
            f"{CONCURRENCY_X_PAYLOAD_LIMIT}; lower one of them"
        )
    low, high = INVOCATIONS_TIMEOUT_RANGE_S
    if not low <= o.invocations_timeout_s <= high:
        out.append(
            f"ModelClientConfig.InvocationsTimeoutInSeconds {o.invocations_timeout_s} is out of range: "
            f"it is {low}-{high}"
        )
    if not 0 <= o.invocations_max_retries <= MAX_INVOCATIONS_RETRIES:
        out.append(
            f"ModelClientConfig.InvocationsMaxRetries {o.invocations_max_retries} is out of range: "
            f"it is 0-{MAX_INVOCATIONS_RETRIES}"
        )
    return out


def _check_split(o: TransformOptions, local: bool) -> list[str]:
    out: list[str] = []
    if o.batch_strategy is BatchStrategy.MULTI_RECORD and o.split_type is SplitType.NONE:
        out.append(
            "BatchStrategy MultiRecord needs SplitType Line: with SplitType None every object is one "
            "record, so there is nothing to pack (use BatchStrategy SingleRecord or SplitType Line)"
        )
    if local and o.split_type not in LOCAL_SPLIT_TYPES:
        out.append(
            f"SplitType {o.split_type} is not emulated locally (only None and Line are); "
            "convert the input to JSON Lines or CSV, or run the job on SageMaker"
        )
    return out


def _check_data_processing(o: TransformOptions, local: bool) -> list[str]:
    # Imported here so that the option types stay importable without the `local` extra (jsonpath-ng).
    from smkit.batch.jsonpath import FilterError, compile_filter

    out: list[str] = []
    for flag, expression in (("InputFilter", o.input_filter), ("OutputFilter", o.output_filter)):
        if expression is None:
            continue
        if len(expression) > FILTER_MAX_LENGTH:
            out.append(
                f"{flag} {expression!r} is {len(expression)} characters; DataProcessing filters are at "
                f"most {FILTER_MAX_LENGTH}"
            )
        try:
            compile_filter(expression)
        except FilterError as exc:
            out.append(f"{flag} {expression!r}: {exc}")
    if not o.processes_data:
        return out
    what = _processing_name(o)
    family = content_family(o.content_type)
    if family is None:
        out.append(
            f"{what} needs ContentType application/json, application/jsonlines or text/csv "
            f"(got {o.content_type!r}): SageMaker parses records only in JSON and CSV"
        )
    needs_output = o.join_source is JoinSource.INPUT or _is_filter(o.output_filter)
    if needs_output:
        accept_family = content_family(o.accept)
        if accept_family is None or (family is not None and accept_family != family):
            out.append(
                f"{what} needs an Accept in the same family as ContentType {o.content_type!r} "
                f"(got {o.accept!r}): e.g. ContentType text/csv with Accept text/csv"
            )
    bare = media_type(o.content_type)
    if bare in LINE_ORIENTED and o.split_type is not SplitType.LINE:
        out.append(
            f"{what} with ContentType {bare} needs SplitType Line (got {o.split_type}) so that each "
            "line is one record"
        )
    line_records = bare in LINE_ORIENTED or o.split_type is SplitType.LINE
    if needs_output and line_records and o.assemble_with is not AssembleWith.LINE:
        out.append(
            f"{what} with line records needs AssembleWith Line (got {o.assemble_with}) so that each "
            "joined or filtered output stays on its own line"
        )
    return out


def _processing_name(o: TransformOptions) -> str:
    parts = []
    if _is_filter(o.input_filter):
        parts.append(f"InputFilter {o.input_filter!r}")
    if o.join_source is JoinSource.INPUT:
        parts.append("JoinSource Input")
    if _is_filter(o.output_filter):
        parts.append(f"OutputFilter {o.output_filter!r}")
    return " / ".join(parts)


_CHECKS = (_check_ranges, _check_split, _check_data_processing)
