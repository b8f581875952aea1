"""Dynamic batching under a local batch transform job: SingleRecord requests, several in flight at once
(MaxConcurrentTransforms), served by predict_batch_fn with the records' outputs in input order."""

from __future__ import annotations

import json
from pathlib import Path

from serving_models import write_model

from smkit.batch.local import LocalModel, run_local_job
from smkit.batch.options import AssembleWith, BatchStrategy, SplitType, TransformOptions

RECORDS = 12

SUMS = """
import json
import os


def model_fn(model_dir):
    return sum


def input_fn(data, content_type):
    return json.loads(data)


def predict_batch_fn(inputs, model):
    with open(os.environ["SMKIT_TEST_BATCHES"], "a") as log:
        log.write(f"{len(inputs)}\\n")
    return [model(row) for row in inputs]


def output_fn(prediction, accept):
    return json.dumps({"sum": prediction}), "application/json"
"""


def test_single_record_requests_in_flight_together_are_batched_in_order(tmp_path: Path) -> None:
    model = write_model(tmp_path, "sums", SUMS)
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "rows.jsonl").write_text("".join(json.dumps([n, n]) + "\n" for n in range(RECORDS)))
    batches = tmp_path / "batches.log"
    environment = {
        "SAGEMAKER_MODEL_SERVER_WORKERS": "1",
        "SAGEMAKER_TS_BATCH_SIZE": "4",
        "SAGEMAKER_TS_MAX_BATCH_DELAY": "50",
        "SMKIT_TEST_BATCHES": str(batches),
    }
    options = TransformOptions(
        content_type="application/json",
        split_type=SplitType.LINE,
        batch_strategy=BatchStrategy.SINGLE_RECORD,
        max_concurrent_transforms=4,
        assemble_with=AssembleWith.LINE,
    )
    result = run_local_job(
        options,
        LocalModel(model, environment),
        input_location=str(inputs),
        output_location=str(tmp_path / "out"),
        log=lambda line: None,
        container_log=tmp_path / "container.log",
    )
    assert result.ok, result.summary()
    lines = (tmp_path / "out" / "rows.jsonl.out").read_text().splitlines()
    assert [json.loads(line)["sum"] for line in lines] == [2 * n for n in range(RECORDS)]
    sizes = [int(size) for size in batches.read_text().split()]
    assert sum(sizes) == RECORDS  # every record went through predict_batch_fn, once
