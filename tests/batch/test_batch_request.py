"""Without --local: the CreateTransformJob request the options build, checked and submitted to moto."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from smkit.batch.options import (
    AssembleWith,
    BatchStrategy,
    JoinSource,
    SplitType,
    TransformOptions,
    TransformOptionsError,
)
from smkit.batch.request import JobTarget, build_request, submit
from smkit.cli import main
from smkit.emulator.moto_server import MotoServer

JSONL_JOIN = TransformOptions(
    content_type="application/json",
    accept="application/json",
    split_type=SplitType.LINE,
    batch_strategy=BatchStrategy.SINGLE_RECORD,
    max_payload_mb=1,
    max_concurrent_transforms=4,
    assemble_with=AssembleWith.LINE,
    output_filter="$['value','SageMakerOutput']",
    join_source=JoinSource.INPUT,
)
TARGET = JobTarget(
    model_name="batch-demo",
    input_uri="s3://bucket/batch_input/",
    output_uri="s3://bucket/output/",
    job_name="jsonl-join",
    environment={"SAGEMAKER_PROGRAM": "inference.py"},
)


def test_request_mirrors_every_option() -> None:
    request = build_request(JSONL_JOIN, TARGET)
    assert request == {
        "TransformJobName": "jsonl-join",
        "ModelName": "batch-demo",
        "MaxConcurrentTransforms": 4,
        "MaxPayloadInMB": 1,
        "BatchStrategy": "SingleRecord",
        "ModelClientConfig": {"InvocationsTimeoutInSeconds": 600, "InvocationsMaxRetries": 3},
        "Environment": {"SAGEMAKER_PROGRAM": "inference.py"},
        "TransformInput": {
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://bucket/batch_input/"}},
            "ContentType": "application/json",
            "SplitType": "Line",
        },
        "TransformOutput": {
            "S3OutputPath": "s3://bucket/output/",
            "Accept": "application/json",
            "AssembleWith": "Line",
        },
        "TransformResources": {"InstanceType": "ml.m5.large", "InstanceCount": 1},
        "DataProcessing": {"OutputFilter": "$['value','SageMakerOutput']", "JoinSource": "Input"},
    }


def test_unset_options_are_left_to_sagemaker() -> None:
    request = build_request(TransformOptions(), JobTarget("m", "s3://b/in", "s3://b/out"))
    for key in (
        "MaxConcurrentTransforms",
        "MaxPayloadInMB",
        "BatchStrategy",
        "DataProcessing",
        "Environment",
    ):
        assert key not in request
    assert request["TransformJobName"].startswith("m-batch-")
    assert "SplitType" not in request["TransformInput"]


def test_target_problems_are_collected() -> None:
    with pytest.raises(TransformOptionsError) as info:
        build_request(
            TransformOptions(), JobTarget("", "data/in", "out/", job_name="bad_name!", instance_count=0)
        )
    text = str(info.value)
    assert "ModelName is required" in text
    assert "the input location 'data/in' must be an s3:// URI" in text
    assert "the output location 'out/' must be an s3:// URI" in text
    assert "TransformJobName 'bad_name!' is not valid" in text
    assert "InstanceCount 0 must be 1 or more" in text


def test_botocore_api_model_refuses_what_aws_would() -> None:
    with pytest.raises(TransformOptionsError, match="InstanceType 'm5.large' is not a SageMaker instance"):
        build_request(TransformOptions(), JobTarget("m", "s3://b/in", "s3://b/out", instance_type="m5.large"))
    with pytest.raises(TransformOptionsError, match="would be refused: Invalid length for parameter Tags"):
        build_request(TransformOptions(), JobTarget("m", "s3://b/in", "s3://b/out", tags={"": "v"}))


def test_submitted_to_moto(aws: MotoServer) -> None:
    answer = submit(build_request(JSONL_JOIN, TARGET), endpoint_url=aws.endpoint_url)
    assert answer["TransformJobName"] == "jsonl-join"
    assert answer["TransformInput"]["SplitType"] == "Line"
    assert answer["BatchStrategy"] == "SingleRecord"
    assert answer["DataProcessing"]["JoinSource"] == "Input"


def test_cli_dry_run_prints_the_request_and_cli_submits(aws: MotoServer) -> None:
    args = [
        "batch-transform", "--model-name", "batch-demo", "--input", "s3://bucket/in/", "--output",
        "s3://bucket/out/", "--content-type", "text/csv", "--accept", "text/csv", "--split-type", "line",
        "--batch-strategy", "MultiRecord", "--max-payload-mb", "2", "--assemble-with", "Line",
        "--input-filter", "$[1:]", "--join-source", "Input", "--output-filter", "$[0,-1]",
        "--job-name", "csv-join",
    ]  # fmt: skip
    runner = CliRunner()
    dry = runner.invoke(main, [*args, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    request = json.loads(dry.output)
    assert request["DataProcessing"] == {
        "InputFilter": "$[1:]",
        "OutputFilter": "$[0,-1]",
        "JoinSource": "Input",
    }
    assert request["TransformInput"]["SplitType"] == "Line"
    sent = runner.invoke(main, args)
    assert sent.exit_code == 0, sent.output
    assert sent.output.startswith("Created csv-join (arn:aws:sagemaker:")
    waited = runner.invoke(main, [*args[:-1], "csv-join-2", "--wait"])
    assert waited.exit_code == 0, waited.output
    assert waited.output.rstrip().endswith(": Completed")


def test_cli_refuses_local_only_options_and_bad_combinations() -> None:
    runner = CliRunner()
    result = runner.invoke(
        main,
        ["batch-transform", "--model", "build/model.tar.gz", "--input", "s3://b/i", "--output", "s3://b/o"],
    )
    assert result.exit_code == 2
    assert "--model/--config are for --local" in result.output
    result = runner.invoke(
        main,
        ["batch-transform", "--model-name", "m", "--input", "s3://b/i", "--output", "s3://b/o",
         "--join-source", "Input", "--content-type", "image/png"],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "JoinSource Input needs ContentType application/json" in result.output
