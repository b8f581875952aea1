"""``model_data.source: s3`` on the local endpoint: the object or prefix is downloaded from S3 (moto's server
here) with boto3's usual credentials before the container starts; a missing object is a clear error."""

from __future__ import annotations

import json
import tarfile
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml

from smkit.config import parse_config
from smkit.local import LocalEndpoint, LocalEndpointError


def _config(repo: Path, uri: str) -> Any:
    data = yaml.safe_load((repo / "config" / "realtime.yaml").read_text())
    data["name"] = "tabular-from-s3"
    data["endpoint"]["variants"] = data["endpoint"]["variants"][:1]
    data["endpoint"]["variants"][0]["initial_weight"] = 1
    data["model"]["containers"][0]["model_data"] = {"source": "s3", "uri": uri}
    return parse_config(data)


def _bucket(aws: Any) -> tuple[Any, str]:
    s3 = boto3.client("s3", endpoint_url=aws.endpoint_url)
    name = f"models-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return s3, name


def _predicts(endpoint: LocalEndpoint, sample: Any) -> None:
    resp = endpoint.client().invoke_endpoint(
        EndpointName=endpoint.name,
        ContentType="text/csv",
        Accept="application/json",
        Body=sample("tabular", "request.csv"),
    )
    expected = json.loads(sample("tabular", "expected.json"))
    predictions = json.loads(resp["Body"].read())["predictions"]
    assert predictions == pytest.approx(expected["predictions"], rel=expected["rtol"])


def test_archive_in_s3_is_downloaded_and_served(aws, repo, sample, tmp_path):
    s3, bucket = _bucket(aws)
    s3.upload_file(str(repo / "build" / "model.tar.gz"), bucket, "jobs/xgb-1/output/model.tar.gz")
    config = _config(repo, f"s3://{bucket}/jobs/xgb-1/output/model.tar.gz")
    with LocalEndpoint(config, root=tmp_path, s3_endpoint_url=aws.endpoint_url, log_dir=tmp_path) as ep:
        _predicts(ep, sample)


def test_prefix_in_s3_is_downloaded_uncompressed_and_served(aws, repo, sample, tmp_path):
    s3, bucket = _bucket(aws)
    with tarfile.open(repo / "build" / "model.tar.gz") as archive:
        archive.extractall(tmp_path / "model", filter="data")
    for path in (tmp_path / "model").rglob("*"):
        if path.is_file():
            s3.upload_file(str(path), bucket, f"large/v3/{path.relative_to(tmp_path / 'model').as_posix()}")
    config = _config(repo, f"s3://{bucket}/large/v3/")
    with LocalEndpoint(config, root=tmp_path, s3_endpoint_url=aws.endpoint_url, log_dir=tmp_path) as ep:
        _predicts(ep, sample)


@pytest.mark.parametrize("key", ["missing/model.tar.gz", "missing/prefix/"])
def test_missing_model_data_in_s3_names_the_uri_and_the_fix(aws, repo, tmp_path, key):
    _, bucket = _bucket(aws)
    uri = f"s3://{bucket}/{key}"
    endpoint = LocalEndpoint(_config(repo, uri), root=tmp_path, s3_endpoint_url=aws.endpoint_url)
    with pytest.raises(LocalEndpointError, match=rf"{uri}.*may s3:GetObject and s3:ListBucket there"):
        endpoint.start()
    assert not endpoint.serving
    assert not endpoint.runtime.workdir.exists()
