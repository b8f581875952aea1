"""InputFilter, JoinSource and OutputFilter end to end for CSV and JSON, against the real runtime."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from smkit.batch.local import LocalModel, run_local_job
from smkit.batch.options import (
    AssembleWith,
    BatchStrategy,
    CompressionType,
    JoinSource,
    SplitType,
    TransformOptions,
)

FEATSUM = LocalModel(Path(__file__).parent / "featsum")
CSV_ROWS = ["r1,1,2,3", 'r2,4,5,"6"', "r3,0.5,0.25,0.25"]
JSONL_ROWS = [
    {"id": "a", "features": [1, 2], "note": "x"},
    {"id": "b", "features": [3, 4.5], "note": "y"},
]


def _job(options: TransformOptions, inputs: Path, out: Path) -> list[str]:
    log: list[str] = []
    result = run_local_job(
        options, FEATSUM, input_location=str(inputs), output_location=str(out), log=log.append
    )
    assert result.ok, result.summary() + "\n" + "\n".join(log)
    return [o.output or "" for o in result.objects]


def _csv_options(**overrides: object) -> TransformOptions:
    base: dict[str, object] = {
        "content_type": "text/csv",
        "accept": "text/csv",
        "split_type": SplitType.LINE,
        "assemble_with": AssembleWith.LINE,
        "input_filter": "$[1:]",
        "join_source": JoinSource.INPUT,
        "output_filter": "$[0,-1]",
    }
    return TransformOptions(**{**base, **overrides})  # type: ignore[arg-type]


def test_csv_drop_id_column_join_and_keep_id_with_prediction(tmp_path: Path) -> None:
    """The AWS docs example: InputFilter $[1:], JoinSource Input, OutputFilter $[0,-1]."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "rows.csv").write_text("\n".join(CSV_ROWS) + "\n")
    for strategy in (BatchStrategy.SINGLE_RECORD, BatchStrategy.MULTI_RECORD):
        out = tmp_path / f"out-{strategy}"
        _job(_csv_options(batch_strategy=strategy, max_concurrent_transforms=2), tmp_path / "in", out)
        assert (out / "rows.csv.out").read_text() == "r1,6\nr2,15\nr3,1\n"


def test_csv_join_without_output_filter_appends_the_output_column(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "rows.csv").write_text("\n".join(CSV_ROWS) + "\n")
    _job(_csv_options(output_filter=None), tmp_path / "in", tmp_path / "out")
    assert (tmp_path / "out" / "rows.csv.out").read_text() == "r1,1,2,3,6\nr2,4,5,6,15\nr3,0.5,0.25,0.25,1\n"


def test_json_lines_filter_join_and_select(tmp_path: Path) -> None:
    """The AWS docs JSON example: InputFilter $.features, join, OutputFilter $['id','SageMakerOutput']."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in JSONL_ROWS))
    options = TransformOptions(
        content_type="application/jsonlines",
        accept="application/jsonlines",
        split_type=SplitType.LINE,
        batch_strategy=BatchStrategy.MULTI_RECORD,
        assemble_with=AssembleWith.LINE,
        input_filter="$.features",
        join_source=JoinSource.INPUT,
        output_filter="$['id','SageMakerOutput']",
    )
    _job(options, tmp_path / "in", tmp_path / "out")
    assert (tmp_path / "out" / "rows.jsonl.out").read_text().splitlines() == [
        '{"id":"a","SageMakerOutput":{"sum":3}}',
        '{"id":"b","SageMakerOutput":{"sum":7.5}}',
    ]


def test_json_document_split_none_with_gzip_input(tmp_path: Path) -> None:
    """A whole JSON document (SplitType None) from a gzip object; the join keeps the input's other keys."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "doc.json.gz").write_bytes(gzip.compress(json.dumps(JSONL_ROWS[0]).encode()))
    options = TransformOptions(
        content_type="application/json",
        accept="application/json",
        compression_type=CompressionType.GZIP,
        input_filter="$.features",
        join_source=JoinSource.INPUT,
    )
    _job(options, tmp_path / "in", tmp_path / "out")
    joined = json.loads((tmp_path / "out" / "doc.json.gz.out").read_text())
    assert joined == {"SageMakerOutput": {"sum": 3}, "id": "a", "features": [1, 2], "note": "x"}
