"""The pure core of batch transform: splitting, packing, assembly, JSONPath filters, joins, validation."""

from __future__ import annotations

import json
import re

import pytest

from smkit.batch.dataprocessing import DataProcessingError, build_processor, split_output
from smkit.batch.jsonpath import FilterError, compile_filter
from smkit.batch.options import (
    AssembleWith,
    BatchStrategy,
    JoinSource,
    SplitType,
    TransformOptions,
    TransformOptionsError,
    resolve,
    validate,
)
from smkit.batch.records import PayloadTooLargeError, assemble, pack, split_records

THREE_LINES = b'{"value":1}\n{"value":3}\n{"value":4}\n'

# --- splitting, packing, assembly ------------------------------------------------------------------------


def test_split_none_is_the_whole_object() -> None:
    assert split_records(THREE_LINES, SplitType.NONE) == [THREE_LINES]
    assert split_records(b"", SplitType.NONE) == []


def test_split_line_keeps_newlines_and_drops_blank_lines() -> None:
    data = b'{"value":1}\n\n{"value":3}\r\n{"value":4}'
    assert split_records(data, SplitType.LINE) == [b'{"value":1}\n', b'{"value":3}\r\n', b'{"value":4}']


def test_single_record_sends_one_record_per_request() -> None:
    records = split_records(THREE_LINES, SplitType.LINE)
    batches = pack(records, BatchStrategy.SINGLE_RECORD, 100)
    assert [b.body for b in batches] == records
    assert [b.first for b in batches] == [0, 1, 2]


def test_multi_record_packs_up_to_max_bytes_with_newlines_between_records() -> None:
    records = [b"aaaa\n", b"bbbb\n", b"cccc\n", b"dd"]
    batches = pack(records, BatchStrategy.MULTI_RECORD, 10)
    assert [b.body for b in batches] == [b"aaaa\nbbbb\n", b"cccc\ndd"]
    assert [(b.first, len(b.records)) for b in batches] == [(0, 2), (2, 2)]
    # A last line without newline gets one when another record follows it in the same body.
    assert pack([b"x", b"y"], BatchStrategy.MULTI_RECORD, None)[0].body == b"x\ny"


def test_multi_record_body_is_what_json_loads_rejects_with_extra_data() -> None:
    """MultiRecord: the packed body reaches input_fn as several lines; json.loads fails at char 12."""
    body = pack(split_records(THREE_LINES, SplitType.LINE), BatchStrategy.MULTI_RECORD, 1024 * 1024)[0].body
    with pytest.raises(json.JSONDecodeError, match=r"Extra data: line 2 column 1 \(char 12\)"):
        json.loads(body)


def test_record_over_max_payload_fails_like_sagemaker() -> None:
    with pytest.raises(PayloadTooLargeError, match="Too much data for max payload size: the whole object"):
        pack([b"x" * 11], BatchStrategy.SINGLE_RECORD, 10, SplitType.NONE)
    with pytest.raises(PayloadTooLargeError, match="record 2 is 11 bytes") as info:
        pack([b"ok\n", b"x" * 11], BatchStrategy.MULTI_RECORD, 10)
    assert info.value.record == 1


def test_assemble_none_glues_and_line_adds_one_newline() -> None:
    outputs = ['{"output": "I want to 🍵"}'.encode(), b"b\n"]
    assert assemble(outputs, AssembleWith.NONE) == '{"output": "I want to 🍵"}b\n'.encode()
    assert assemble(outputs, AssembleWith.LINE) == '{"output": "I want to 🍵"}\nb\n'.encode()


# --- JSONPath subset -------------------------------------------------------------------------------------

ROW = ["id7", "1.5", "2.5", "3.5", "4.5", "5.5", "6.5"]
DOC = {"id": 7, "features": [1, 2, 3], "SageMakerOutput": {"score": 0.9}}


@pytest.mark.parametrize(
    ("expression", "value", "expected"),
    [
        ("$", DOC, DOC),
        ("$.features", DOC, [1, 2, 3]),
        ("$['features']", DOC, [1, 2, 3]),
        ("$.features[0]", DOC, 1),
        ("$['id','SageMakerOutput']", DOC, {"id": 7, "SageMakerOutput": {"score": 0.9}}),
        ("$.*", DOC, DOC),
        ("$[1:]", ROW, ROW[1:]),
        ("$[1:3]", ROW, ROW[1:3]),
        ("$[-1]", ROW, ROW[-1]),
        ("$[-2:]", ROW, ROW[-2:]),
        ("$[0,-1]", ROW, [ROW[0], ROW[-1]]),
        ("$[0,5:]", ROW, [ROW[0], *ROW[5:]]),
        ("$[*]", ROW, ROW),
    ],
)
def test_filter_subset(expression: str, value: object, expected: object) -> None:
    assert compile_filter(expression).apply(value) == expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("features", "must start with '\\$'"),
        ("$..id", "Descendants .* not in SageMaker's JSONPath subset"),
        ("$[", "not a supported JSONPath"),
    ],
)
def test_filter_errors_name_the_problem(expression: str, message: str) -> None:
    with pytest.raises(FilterError, match=message):
        compile_filter(expression)


def test_filter_index_outside_the_record_is_an_error() -> None:
    with pytest.raises(FilterError, match=r"selects index \[0, 9\] but the record has 7 elements"):
        compile_filter("$[0,9]").apply(ROW)
    with pytest.raises(FilterError, match="selects nothing"):
        compile_filter("$.missing").apply(DOC)


# --- joins and filters per record ------------------------------------------------------------------------


def test_json_join_puts_output_under_sagemaker_output_compactly() -> None:
    processor = build_processor(
        TransformOptions(
            content_type="application/jsonlines",
            accept="application/jsonlines",
            split_type=SplitType.LINE,
            join_source=JoinSource.INPUT,
        )
    )
    joined = processor.finish(b'{"value":1}\n', '{"output": "I want to 🍵"}'.encode(), 0)
    assert joined.decode() == '{"SageMakerOutput":{"output":"I want to 🍵"},"value":1}'
    # A non-object input is wrapped.
    assert processor.finish(b"[1,2]\n", b"3", 0) == b'{"SageMakerInput":[1,2],"SageMakerOutput":3}'


def test_json_input_and_output_filters() -> None:
    processor = build_processor(
        TransformOptions(
            content_type="application/jsonlines",
            accept="application/jsonlines",
            split_type=SplitType.LINE,
            input_filter="$.features",
            join_source=JoinSource.INPUT,
            output_filter="$['id','SageMakerOutput']",
        )
    )
    record = b'{"id":"a","features":[1,2],"noise":true}\n'
    assert processor.prepare(record, 0) == b"[1,2]\n"
    assert processor.finish(record, b"[0.5]", 0) == b'{"id":"a","SageMakerOutput":[0.5]}'


def test_csv_filters_index_columns_and_join_appends_output_columns() -> None:
    processor = build_processor(
        TransformOptions(
            content_type="text/csv",
            accept="text/csv",
            split_type=SplitType.LINE,
            input_filter="$[1:]",
            join_source=JoinSource.INPUT,
            output_filter="$[0,-1]",
        )
    )
    record = b'id-1,5.1,"3,5",1.4\n'
    assert processor.prepare(record, 0) == b'5.1,"3,5",1.4\n'
    assert processor.finish(record, b"0.93\n", 0) == b"id-1,0.93"
    join_only = build_processor(
        TransformOptions(content_type="text/csv", accept="text/csv", join_source=JoinSource.INPUT)
    )
    assert join_only.finish(b"a,b\n", b"1,2\n", 0) == b"a,b,1,2"


def test_unparseable_output_names_the_record() -> None:
    processor = build_processor(
        TransformOptions(
            content_type="application/jsonlines",
            accept="application/jsonlines",
            join_source=JoinSource.INPUT,
        )
    )
    with pytest.raises(DataProcessingError, match="model output 3 is not valid JSON"):
        processor.finish(b'{"value":1}', b"I want to tea", 2)


def test_multi_record_output_must_have_one_line_per_record_to_join() -> None:
    assert split_output(b"a\nb\n", 2, 0) == [b"a", b"b"]
    with pytest.raises(DataProcessingError, match="records 5-7 with 1 lines"):
        split_output(b"a b c", 3, 4)


# --- option validation -----------------------------------------------------------------------------------


def _problems(**kwargs: object) -> list[str]:
    with pytest.raises(TransformOptionsError) as info:
        validate(TransformOptions(**kwargs), local=True)  # type: ignore[arg-type]
    return info.value.problems


def test_valid_join_options_pass() -> None:
    validate(
        TransformOptions(
            content_type="application/json",
            accept="application/json",
            split_type=SplitType.LINE,
            batch_strategy=BatchStrategy.SINGLE_RECORD,
            assemble_with=AssembleWith.LINE,
            join_source=JoinSource.INPUT,
            max_payload_mb=1,
        ),
        local=True,
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch_strategy": BatchStrategy.MULTI_RECORD}, "MultiRecord needs SplitType Line"),
        ({"split_type": SplitType.RECORDIO}, "SplitType RecordIO is not emulated locally"),
        ({"max_payload_mb": 101}, "MaxPayloadInMB 101 is out of range"),
        (
            {"max_payload_mb": 20, "max_concurrent_transforms": 6},
            r"6 x MaxPayloadInMB 20 = 120 exceeds 100",
        ),
        ({"max_concurrent_transforms": 0}, "MaxConcurrentTransforms 0 is out of range"),
        ({"invocations_max_retries": 4}, "InvocationsMaxRetries 4 is out of range: it is 0-3"),
        (
            {"join_source": JoinSource.INPUT, "content_type": "application/x-npy"},
            "needs ContentType application/json, application/jsonlines or text/csv",
        ),
        (
            {
                "join_source": JoinSource.INPUT,
                "content_type": "text/csv",
                "accept": "application/json",
                "split_type": SplitType.LINE,
                "assemble_with": AssembleWith.LINE,
            },
            "needs an Accept in the same family",
        ),
        (
            {"output_filter": "$[0]", "content_type": "text/csv", "accept": "text/csv"},
            "needs SplitType Line",
        ),
        (
            {
                "join_source": JoinSource.INPUT,
                "content_type": "text/csv",
                "accept": "text/csv",
                "split_type": SplitType.LINE,
            },
            "needs AssembleWith Line",
        ),
        ({"input_filter": "$..x", "content_type": "application/json"}, "InputFilter '\\$..x'"),
        ({"output_filter": "$['" + "a" * 70 + "']"}, "DataProcessing filters are at most 63"),
    ],
)
def test_validation_names_option_value_and_fix(kwargs: dict[str, object], message: str) -> None:
    problems = _problems(**kwargs)
    assert any(re.search(message, p) for p in problems), problems


def test_validation_collects_every_problem() -> None:
    problems = _problems(
        batch_strategy=BatchStrategy.MULTI_RECORD, max_payload_mb=200, split_type=SplitType.TFRECORD
    )
    assert len(problems) == 3
    # Without --local the AWS split types are fine.
    validate(TransformOptions(split_type=SplitType.TFRECORD), local=False)


def test_resolve_takes_unset_values_from_execution_parameters_then_defaults() -> None:
    options = TransformOptions(split_type=SplitType.LINE)
    resolved = resolve(
        options, {"MaxConcurrentTransforms": 4, "BatchStrategy": "MULTI_RECORD", "MaxPayloadInMB": 2}
    )
    assert (resolved.max_concurrent_transforms, resolved.batch_strategy, resolved.max_payload_mb) == (
        4,
        BatchStrategy.MULTI_RECORD,
        2,
    )
    assert resolved.max_payload_bytes == 2 * 1024 * 1024
    defaults = resolve(TransformOptions(), None)
    assert defaults.banner() == "MaxConcurrentTransforms=1, MaxPayloadInMB=6, BatchStrategy=SINGLE_RECORD"
    explicit = resolve(TransformOptions(max_payload_mb=1), {"MaxPayloadInMB": 6})
    assert explicit.max_payload_mb == 1
    odd = resolve(
        TransformOptions(), {"MaxConcurrentTransforms": 0, "MaxPayloadInMB": 500, "BatchStrategy": 1}
    )
    assert (odd.max_concurrent_transforms, odd.max_payload_mb) == (1, 6)
    clamped = resolve(TransformOptions(max_payload_mb=50), {"MaxConcurrentTransforms": 8})
    assert clamped.max_concurrent_transforms == 2  # MaxConcurrentTransforms x MaxPayloadInMB <= 100
