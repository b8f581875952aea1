"""The TensorFlow example end to end: config/tf-insurance.yaml as a local endpoint called through boto3,
and a local batch transform of its ``;``-separated latin-1 CSV, both on build/tf_insurance.tar.gz
(``make package-model`` builds it, as for every example)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from tfs_harness import EXAMPLE, REPO

from smkit.local import LocalEndpoint

ARCHIVE = REPO / "build" / "tf_insurance.tar.gz"
SMKIT = str(Path(sys.executable).parent / "smkit")
EXPECTED = json.loads((EXAMPLE / "samples" / "expected.json").read_text())


def assert_pairs(got: list[list[Any]]) -> None:
    assert [g[0] for g in got] == [p[0] for p in EXPECTED["predictions"]]
    assert [g[1] for g in got] == pytest.approx([p[1] for p in EXPECTED["predictions"]], rel=EXPECTED["rtol"])


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEndpoint]:
    assert ARCHIVE.is_file(), "run `make package-model` first: it builds build/tf_insurance.tar.gz"
    with LocalEndpoint(
        REPO / "config" / "tf-insurance.yaml", root=REPO, log_dir=tmp_path_factory.mktemp("logs")
    ) as ep:
        yield ep


def test_boto3_json_and_csv_through_the_local_endpoint(endpoint: LocalEndpoint) -> None:
    runtime = endpoint.client()
    answer = runtime.invoke_endpoint(
        EndpointName="tf-insurance",
        ContentType="application/json",
        Accept="application/json",
        Body=(EXAMPLE / "samples" / "request.json").read_bytes(),
    )
    assert answer["ContentType"] == "application/json"
    assert answer["InvokedProductionVariant"] == "main"
    assert_pairs(json.loads(answer["Body"].read())["predictions"])
    as_csv = runtime.invoke_endpoint(
        EndpointName="tf-insurance",
        ContentType="text/csv",
        Accept="text/csv",
        Body=(EXAMPLE / "samples" / "request.csv").read_bytes(),
    )
    rows = [line.split(";") for line in as_csv["Body"].read().decode("latin-1").splitlines()]
    assert_pairs([[int(i), float(p)] for i, p in rows])


def test_handler_error_is_a_model_error(endpoint: LocalEndpoint) -> None:
    runtime = endpoint.client()
    with pytest.raises(ClientError) as caught:
        runtime.invoke_endpoint(EndpointName="tf-insurance", ContentType="text/plain", Body=b"1;2")
    error = caught.value.response["Error"]
    assert error["Code"] == "ModelError"
    assert "unsupported content type text/plain" in error["Message"]


def test_local_batch_transform_of_the_semicolon_csv(tmp_path: Path) -> None:
    assert ARCHIVE.is_file(), "run `make package-model` first: it builds build/tf_insurance.tar.gz"
    inputs = tmp_path / "in"
    inputs.mkdir()
    csv = (EXAMPLE / "samples" / "request.csv").read_bytes()
    (inputs / "quotations.csv").write_bytes(csv + csv)  # two mini-batches' worth of lines
    result = subprocess.run(
        [
            SMKIT, "batch-transform", "--local", "--model", str(ARCHIVE),
            "--input", str(inputs), "--output", str(tmp_path / "out"),
            "--content-type", "text/csv", "--accept", "text/csv", "--split-type", "line",
            "--batch-strategy", "multirecord", "--max-payload-mb", "1", "--assemble-with", "line",
        ],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    lines = (tmp_path / "out" / "quotations.csv.out").read_bytes().decode("latin-1").splitlines()
    rows = [line.split(";") for line in lines]
    assert len(rows) == 2 * len(EXPECTED["predictions"])
    half = len(EXPECTED["predictions"])
    assert_pairs([[int(i), float(p)] for i, p in rows[:half]])
    assert_pairs([[int(i), float(p)] for i, p in rows[half:]])
