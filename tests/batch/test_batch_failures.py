"""Failure modes of a local job: per-object failures, no partial outputs, clear errors, nothing left running."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from waiting import wait_until

from smkit.batch.local import LocalModel, run_local_job
from smkit.batch.objects import StorageError
from smkit.batch.options import (
    AssembleWith,
    BatchStrategy,
    JoinSource,
    SplitType,
    TransformOptions,
    TransformOptionsError,
)
from smkit.cli import main
from smkit.emulator.moto_server import MotoServer
from smkit.process import ProcessStartError

JSON = "application/json"
GOOD = '{"value":1}\n{"value":2}\n'
BAD = '{"value":1}\n{"valu":2}\n{"value":3}\n'
# Set explicitly: left unset, the runtime's /execution-parameters answer (MULTI_RECORD) would decide.
LINE_JOB = ["--content-type", JSON, "--accept", JSON, "--split-type", "Line", "--assemble-with", "Line",
            "--batch-strategy", "SingleRecord"]  # fmt: skip


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["batch-transform", *args])
    return result.exit_code, result.stdout, result.stderr


def test_s3_in_and_out_one_object_fails_the_other_completes(aws: MotoServer, demo_archive: Path) -> None:
    """A handler error in one object: that object gets no .out (a stale one is removed), the job exits 1."""
    s3 = aws.client("s3")
    s3.create_bucket(Bucket="jobs")
    s3.put_object(Bucket="jobs", Key="batch_input/good.jsonl", Body=GOOD.encode())
    s3.put_object(Bucket="jobs", Key="batch_input/sub/bad.jsonl", Body=BAD.encode())
    s3.put_object(Bucket="jobs", Key="output/sub/bad.jsonl.out", Body=b"stale")
    code, out, err = _cli(
        "--local", "--model", str(demo_archive), "--input", "s3://jobs/batch_input/",
        "--output", "s3://jobs/output", *LINE_JOB, "--join-source", "Input",
    )  # fmt: skip
    assert code == 1, out + err
    good = s3.get_object(Bucket="jobs", Key="output/good.jsonl.out")["Body"].read().decode()
    assert good.splitlines() == [
        '{"SageMakerOutput":{"output":"I want to 🍵"},"value":1}',
        '{"SageMakerOutput":{"output":"I want to 🍣"},"value":2}',
    ]
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="jobs", Prefix="output/")["Contents"]]
    assert keys == ["output/good.jsonl.out"]
    bad = "s3://jobs/batch_input/sub/bad.jsonl"
    assert f"[sagemaker logs]: {bad}: Bad HTTP status received from algorithm: 500" in err
    assert f"[sagemaker logs]: {bad}: removed sub/bad.jsonl.out left by an earlier run" in err
    assert f"[sagemaker logs]: {bad}: (the failed request carried records 2-2 of 3)" in err
    assert "Transform job Failed (1 of 2 input objects failed)" in out
    assert re.search(r"s3://jobs/batch_input/good\.jsonl +Completed +2 +2  s3://jobs/output/good", out)
    assert re.search(
        r"s3://jobs/batch_input/sub/bad\.jsonl +Failed +3 +3  algorithm answered HTTP 500: ", out
    )


def test_record_larger_than_max_payload_in_line_mode(demo_archive: Path, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    big = '{"value":1,"pad":"' + "x" * (1024 * 1024) + '"}\n'
    (tmp_path / "in" / "x.jsonl").write_text(GOOD + big)
    log: list[str] = []
    result = run_local_job(
        TransformOptions(content_type=JSON, split_type=SplitType.LINE, max_payload_mb=1),
        LocalModel(demo_archive),
        input_location=str(tmp_path / "in"),
        output_location=str(tmp_path / "out"),
        log=log.append,
    )
    assert not result.ok
    assert (result.objects[0].error or "").startswith(
        "Too much data for max payload size: record 3 is 1,048,"
    )
    assert not (tmp_path / "out").exists()


def test_output_filter_outside_the_record_fails_the_object(demo_archive: Path, tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "x.jsonl").write_text(GOOD)
    result = run_local_job(
        TransformOptions(
            content_type=JSON,
            accept=JSON,
            split_type=SplitType.LINE,
            batch_strategy=BatchStrategy.SINGLE_RECORD,
            assemble_with=AssembleWith.LINE,
            join_source=JoinSource.INPUT,
            output_filter="$.missing",
        ),
        LocalModel(demo_archive),
        input_location=str(tmp_path / "in"),
        output_location=str(tmp_path / "out"),
        log=lambda _line: None,
    )
    assert result.objects[0].error == (
        "OutputFilter on record 1: $.missing selects nothing from the record "
        "{'SageMakerOutput': {'output': 'I want to 🍵'}, 'value': 1}"
    )
    assert not (tmp_path / "out").exists()


def test_bad_options_and_locations_fail_before_anything_starts(demo_archive: Path, tmp_path: Path) -> None:
    with pytest.raises(TransformOptionsError, match="needs AssembleWith Line"):
        run_local_job(
            TransformOptions(content_type="text/csv", accept="text/csv", split_type=SplitType.LINE,
                             join_source=JoinSource.INPUT),
            LocalModel(demo_archive),
            input_location=str(tmp_path),
            output_location=str(tmp_path / "out"),
        )  # fmt: skip
    with pytest.raises(StorageError, match="does not exist; give a file, a folder or an s3:// prefix"):
        run_local_job(
            TransformOptions(), LocalModel(demo_archive), input_location=str(tmp_path / "nope"),
            output_location=str(tmp_path / "out"),
        )  # fmt: skip
    with pytest.raises(StorageError, match="output location '.*/out' is inside input location"):
        run_local_job(
            TransformOptions(), LocalModel(demo_archive), input_location=str(tmp_path),
            output_location=str(tmp_path / "out"),
        )  # fmt: skip
    (tmp_path / "empty").mkdir()
    with pytest.raises(StorageError, match="holds no objects"):
        run_local_job(
            TransformOptions(), LocalModel(demo_archive), input_location=str(tmp_path / "empty"),
            output_location=str(tmp_path / "out"),
        )  # fmt: skip
    code, _, err = _cli("--local", "--input", str(tmp_path), "--output", str(tmp_path / "o"))
    assert code == 2
    assert "--local needs exactly one of --model PATH" in err
    code, _, err = _cli("--local", "--model", str(tmp_path / "missing.tar.gz"), "--input", str(tmp_path),
                        "--output", str(tmp_path / "o"))  # fmt: skip
    assert code == 1
    assert "missing.tar.gz' does not exist; build it with `make package-model`" in err


def test_model_that_fails_to_load_is_reported_at_once(tmp_path: Path) -> None:
    model = tmp_path / "model"
    (model / "code").mkdir(parents=True)
    (model / "code" / "inference.py").write_text(
        "def model_fn(model_dir):\n    raise RuntimeError('weights missing: model.pt not found')\n"
    )
    (tmp_path / "x.jsonl").write_text(GOOD)
    with pytest.raises(ProcessStartError, match="weights missing: model.pt not found"):
        run_local_job(
            TransformOptions(), LocalModel(model), input_location=str(tmp_path / "x.jsonl"),
            output_location=str(tmp_path / "out"), startup_timeout_s=60,
        )  # fmt: skip


def test_killed_job_leaves_no_runtime_and_no_partial_output(demo_archive: Path, tmp_path: Path) -> None:
    """SIGTERM to the job mid-run: the runtime's process group goes too, and no .out appears."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "x.jsonl").write_text('{"value":1}\n' * 50_000)
    job = subprocess.Popen(
        [sys.executable, "-c", "from smkit.cli import main; main()", "batch-transform", "--local", "--model", str(demo_archive),
         "--input", str(tmp_path / "in"), "--output", str(tmp_path / "out"), *LINE_JOB,
         "--container-log", str(tmp_path / "container.log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        log = tmp_path / "container.log"
        wait_until(  # until some invocations were answered
            lambda: job.poll() is not None or (log.exists() and log.read_text().count("/invocations") > 10),
            timeout=60,
            what="ten answered invocations",
        )
        assert job.poll() is None, "the job ended before it could be interrupted"
        runtime_pids = {
            int(json.loads(line)["pid"]) for line in log.read_text().splitlines() if line.startswith("{")
        }
        job.terminate()
        job.wait(timeout=30)
    finally:
        if job.poll() is None:
            job.kill()
    assert runtime_pids
    wait_until(
        lambda: not any(Path(f"/proc/{pid}").exists() for pid in runtime_pids),
        timeout=30,
        what="the runtime to go with the job",
    )
    assert not (tmp_path / "out").exists()
    assert os.listdir(tmp_path / "in") == ["x.jsonl"]


def test_s3_locations_that_do_not_exist(aws: MotoServer, demo_archive: Path, tmp_path: Path) -> None:
    code, _, err = _cli("--local", "--model", str(demo_archive), "--input", "s3://no-such-bucket/in/",
                        "--output", str(tmp_path / "out"))  # fmt: skip
    assert code == 1
    assert "listing input s3://no-such-bucket/in/ failed" in err
    assert "NoSuchBucket" in err
    (tmp_path / "x.jsonl").write_text(GOOD)
    code, out, err = _cli("--local", "--model", str(demo_archive), "--input", str(tmp_path / "x.jsonl"),
                          "--output", "s3://no-such-bucket/out/", *LINE_JOB)  # fmt: skip
    assert code == 1
    assert "writing s3://no-such-bucket/out/x.jsonl.out failed" in err
    assert "Transform job Failed (1 of 1 input objects failed)" in out
