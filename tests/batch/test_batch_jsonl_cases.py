"""Five transform-job cases on JSON Lines, end to end: the batch example's model served by the real runtime on 127.0.0.1.

Each test runs a whole local job (runtime started with SAGEMAKER_BATCH=true, stopped afterwards) on the
example's data shape: JSON Lines files of ``{"value": n}`` records, over 1 MiB each where the payload limit matters.
"""

from __future__ import annotations

import json
from pathlib import Path

from jsonl_example import FULL_RECORDS, SMALL_RECORDS, expected_output

from smkit.batch.job import JobResult
from smkit.batch.local import LocalModel, run_local_job
from smkit.batch.options import AssembleWith, BatchStrategy, JoinSource, SplitType, TransformOptions

JSON = "application/json"
NAMES = ("testdata1.jsonl", "testdata2.jsonl")


def _run(
    options: TransformOptions, model: Path, inputs: Path, out: Path, environment: dict[str, str] | None = None
) -> tuple[JobResult, list[str], str]:
    log: list[str] = []
    container_log = out.parent / f"{out.name}-container.log"
    result = run_local_job(
        options,
        LocalModel(model, environment or {}),
        input_location=str(inputs),
        output_location=str(out),
        log=log.append,
        container_log=container_log,
    )
    return result, log, container_log.read_text()


def _invocations(container_log: str) -> int:
    return container_log.count('"path": "/invocations"')


def test_case1_split_none_whole_object_over_max_payload(
    demo_archive: Path, big_inputs: Path, tmp_path: Path
) -> None:
    """SplitType None, SingleRecord, MaxPayloadInMB=1: each 1.4 MB object is one record -> too much data."""
    options = TransformOptions(
        content_type=JSON, batch_strategy=BatchStrategy.SINGLE_RECORD, max_payload_mb=1
    )
    result, log, container_log = _run(options, demo_archive, big_inputs, tmp_path / "out")
    assert not result.ok
    for outcome in result.objects:
        assert outcome.error is not None
        assert outcome.error.startswith("Too much data for max payload size: the whole object is 1,")
        assert "allows 1,048,576 bytes; split it with SplitType Line" in outcome.error
    assert (
        log[0] == "[sagemaker logs]: MaxConcurrentTransforms=1, MaxPayloadInMB=1, BatchStrategy=SINGLE_RECORD"
    )
    assert _invocations(container_log) == 0
    assert not (tmp_path / "out").exists()


def test_case1_split_none_under_max_payload_hands_the_whole_file_to_json_loads(
    demo_archive: Path, big_inputs: Path, tmp_path: Path
) -> None:
    """SageMaker's logs for the same case at MaxPayloadInMB=6: json.loads on the whole file -> 500 Extra data."""
    options = TransformOptions(
        content_type=JSON, batch_strategy=BatchStrategy.SINGLE_RECORD, max_payload_mb=6
    )
    result, log, _ = _run(options, demo_archive, big_inputs, tmp_path / "out")
    assert [o.status for o in result.objects] == [500, 500]
    source = str(big_inputs / "testdata2.jsonl")
    assert f"[sagemaker logs]: {source}: Bad HTTP status received from algorithm: 500" in log
    assert f"[sagemaker logs]: {source}: Message:" in log
    assert f"[sagemaker logs]: {source}: Extra data: line 2 column 1 (char 12)" in log
    assert not (tmp_path / "out").exists()


def test_case2_split_line_single_record_glues_outputs(
    demo_archive: Path, small_inputs: Path, tmp_path: Path
) -> None:
    """SplitType Line, SingleRecord, no AssembleWith: one request per line, outputs concatenated.

    SageMaker writes this case's .out as bare ``I want to 🍵I want to 🍵...`` for an output_fn returning
    strings; with this example's output_fn (JSON objects) the same gluing gives ``{"output": "I want to 🍵"}{"output": ...}``.
    """
    options = TransformOptions(
        content_type=JSON,
        split_type=SplitType.LINE,
        batch_strategy=BatchStrategy.SINGLE_RECORD,
        max_payload_mb=1,
    )
    result, _, container_log = _run(options, demo_archive, small_inputs, tmp_path / "out")
    assert result.ok, result.summary()
    assert _invocations(container_log) == 2 * SMALL_RECORDS
    for name in NAMES:
        text = (tmp_path / "out" / f"{name}.out").read_text(encoding="utf-8")
        assert text == "".join(expected_output(name, SMALL_RECORDS))
        assert text.startswith('{"output": "I want to 🍵"}{"output": "I want to 🍵"}') or name != NAMES[0]


def test_case3_assemble_with_line_puts_each_output_on_its_line(
    demo_archive: Path, small_inputs: Path, tmp_path: Path
) -> None:
    options = TransformOptions(
        content_type=JSON,
        accept=JSON,
        split_type=SplitType.LINE,
        batch_strategy=BatchStrategy.SINGLE_RECORD,
        assemble_with=AssembleWith.LINE,
        max_concurrent_transforms=4,
    )
    result, _, _ = _run(options, demo_archive, small_inputs, tmp_path / "out")
    assert result.ok, result.summary()
    for name in NAMES:
        lines = (tmp_path / "out" / f"{name}.out").read_text(encoding="utf-8").splitlines()
        assert lines == expected_output(name, SMALL_RECORDS)  # input order kept with 4 requests in flight
    first = (tmp_path / "out" / "testdata1.jsonl.out").read_text(encoding="utf-8").splitlines()[:3]
    assert first == ['{"output": "I want to 🍵"}', '{"output": "I want to 🍵"}', '{"output": "I want to 🍣"}']


def test_case4_multi_record_hands_a_multi_line_body_to_json_loads(
    demo_archive: Path, big_inputs: Path, tmp_path: Path
) -> None:
    """SplitType Line, MultiRecord, MaxPayloadInMB=1: bodies under 1 MiB of many lines -> 500 Extra data."""
    options = TransformOptions(
        content_type=JSON,
        split_type=SplitType.LINE,
        batch_strategy=BatchStrategy.MULTI_RECORD,
        max_payload_mb=1,
        invocations_max_retries=0,
    )
    result, log, container_log = _run(options, demo_archive, big_inputs, tmp_path / "out")
    assert not result.ok
    assert [o.records for o in result.objects] == [FULL_RECORDS, FULL_RECORDS]
    assert [o.requests for o in result.objects] == [2, 2]  # 1.4 MB of lines packed into two <= 1 MiB bodies
    for outcome in result.objects:
        assert outcome.status == 500
        assert "Extra data: line 2 column 1 (char 12)" in (outcome.error or "")
        assert f"[sagemaker logs]: {outcome.source}: Extra data: line 2 column 1 (char 12)" in log
    assert not (tmp_path / "out").exists()
    bodies = [
        json.loads(line)["request_bytes"] for line in container_log.splitlines() if "/invocations" in line
    ]
    assert bodies and all(size <= 1024 * 1024 for size in bodies)


def test_case4_splitting_in_input_fn_matches_single_record(
    demo_archive: Path, big_inputs: Path, tmp_path: Path
) -> None:
    """The example's second handler (split in input_fn, join in output_fn) gives the SingleRecord output."""
    options = TransformOptions(
        content_type=JSON,
        accept=JSON,
        split_type=SplitType.LINE,
        batch_strategy=BatchStrategy.MULTI_RECORD,
        max_payload_mb=1,
        assemble_with=AssembleWith.LINE,
        max_concurrent_transforms=2,
    )
    env = {"SAGEMAKER_PROGRAM": "inference_lines.py"}
    result, _, _ = _run(options, demo_archive, big_inputs, tmp_path / "out", env)
    assert result.ok, result.summary()
    for name in NAMES:
        lines = (tmp_path / "out" / f"{name}.out").read_text(encoding="utf-8").splitlines()
        assert lines == expected_output(name, FULL_RECORDS)


def test_case5_join_source_input(demo_archive: Path, small_inputs: Path, tmp_path: Path) -> None:
    options = TransformOptions(
        content_type=JSON,
        accept=JSON,
        split_type=SplitType.LINE,
        batch_strategy=BatchStrategy.SINGLE_RECORD,
        assemble_with=AssembleWith.LINE,
        join_source=JoinSource.INPUT,
        max_concurrent_transforms=2,
    )
    result, _, _ = _run(options, demo_archive, small_inputs, tmp_path / "out")
    assert result.ok, result.summary()
    lines = (tmp_path / "out" / "testdata1.jsonl.out").read_text(encoding="utf-8").splitlines()
    assert lines[:5] == [
        '{"SageMakerOutput":{"output":"I want to 🍵"},"value":1}',
        '{"SageMakerOutput":{"output":"I want to 🍵"},"value":3}',
        '{"SageMakerOutput":{"output":"I want to 🍣"},"value":4}',
        '{"SageMakerOutput":{"output":"I want to 🍵"},"value":15}',
        '{"SageMakerOutput":{"output":"I want to 🍵"},"value":13}',
    ]
    assert len(lines) == SMALL_RECORDS
