"""Additional model data sources on the local endpoint: each channel is a folder the container reads where
its environment names AWS's path (/opt/ml/additional-model-data-sources/<channel>), whether the channel is a
local folder, a local .tar.gz (extracted) or a prefix in S3 (moto's server, downloaded); a missing folder is a
clear error before anything starts. A value names AWS's channels folder only as a whole path (the folder, or
followed by "/"), never as the start of a longer name."""

from __future__ import annotations

import io
import json
import tarfile
import uuid
from pathlib import Path
from typing import Any

import boto3
import numpy as np
import pytest

from smkit.config import parse_config
from smkit.local import LocalEndpoint, LocalEndpointError
from smkit.local.channels import local_value

# A toolkit-style handler: the scale comes from one channel (a NumPy array), the labels from two others.
HANDLER = """
import json
import os
from pathlib import Path

import numpy as np


def model_fn(model_dir):
    scale = np.load(os.path.join(os.environ["SCALE_DIR"], "scale.npy"))
    labels = {
        name: (Path(os.environ["CHANNELS"]) / name / "labels.txt").read_text().split()
        for name in ("labels", "labels-s3")
    }
    return scale, labels


def input_fn(body, content_type):
    return np.asarray(json.loads(body), dtype=np.float64)


def predict_fn(data, model):
    scale, labels = model
    return {"scaled": (data * scale).tolist(), "labels": labels, "draft": os.environ["DRAFT_CONFIG"]}


def output_fn(prediction, accept):
    return json.dumps(prediction), "application/json"
"""


def _tree(tmp_path: Path) -> dict[str, Path]:
    model = tmp_path / "model"
    (model / "code").mkdir(parents=True)
    (model / "code" / "inference.py").write_text(HANDLER)
    scale = tmp_path / "scale"
    scale.mkdir()
    np.save(scale / "scale.npy", np.array([2.0, 10.0]))
    archive = tmp_path / "labels.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        data = b"setosa virginica\n"
        info = tarfile.TarInfo("labels.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return {"model": model, "scale": scale, "archive": archive}


def _config(paths: dict[str, Path], channels: list[dict[str, Any]]) -> Any:
    return parse_config(
        {
            "name": "channels-local",
            "image": {"source": "build"},
            "model": {
                "containers": [
                    {
                        "name": "scaler",
                        "model_data": {"source": "prefix", "path": str(paths["model"])},
                        "additional_model_data": channels,
                        "environment": {
                            "SCALE_DIR": "/opt/ml/additional-model-data-sources/scale",
                            "CHANNELS": "/opt/ml/additional-model-data-sources",
                            "DRAFT_CONFIG": '{"model": "/opt/ml/additional-model-data-sources/scale/"}',
                        },
                    }
                ]
            },
            "endpoint": {"type": "realtime", "variants": [{"name": "main", "instance_type": "ml.m5.large"}]},
        }
    )


def test_the_container_reads_each_channel_where_its_environment_names_awss_path(aws, tmp_path):
    paths = _tree(tmp_path)
    s3 = boto3.client("s3", endpoint_url=aws.endpoint_url)
    bucket = f"channels-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="labels/v1/labels.txt", Body=b"red green blue\n")
    config = _config(
        paths,
        [
            {"channel": "scale", "source": "prefix", "path": str(paths["scale"])},
            {"channel": "labels", "source": "archive", "path": str(paths["archive"])},
            {"channel": "labels-s3", "source": "s3", "uri": f"s3://{bucket}/labels/v1/"},
        ],
    )
    with LocalEndpoint(config, root=tmp_path, s3_endpoint_url=aws.endpoint_url, log_dir=tmp_path) as ep:
        reply = ep.client().invoke_endpoint(
            EndpointName=ep.name, ContentType="application/json", Body=json.dumps([[1.0, 1.0], [3.0, 0.5]])
        )
        answer = json.loads(reply["Body"].read())
        root = ep.runtime.workdir / "channels" / "scaler"
    assert answer["scaled"] == [[2.0, 10.0], [6.0, 5.0]]
    assert answer["labels"] == {"labels": ["setosa", "virginica"], "labels-s3": ["red", "green", "blue"]}
    # A value naming a channel inside JSON (an engine's --speculative-config) names the local folder too.
    assert json.loads(answer["draft"]) == {"model": f"{root}/scale/"}
    assert not root.exists()  # removed with the endpoint's scratch folder


def test_a_channel_folder_that_is_missing_is_named_before_anything_starts(tmp_path):
    paths = _tree(tmp_path)
    missing = tmp_path / "no-such-draft"
    config = _config(paths, [{"channel": "scale", "source": "prefix", "path": str(missing)}])
    endpoint = LocalEndpoint(config, root=tmp_path)
    with pytest.raises(
        LocalEndpointError, match=rf"container scaler's channel scale \({missing}\): .*not a folder"
    ):
        endpoint.start()
    assert not endpoint.serving
    assert not endpoint.runtime.workdir.exists()


@pytest.mark.parametrize(
    ("value", "local"),
    [
        ("/opt/ml/additional-model-data-sources", "/ch"),
        ("/opt/ml/additional-model-data-sources/", "/ch/"),
        ("/opt/ml/additional-model-data-sources/draft", "/ch/draft"),
        ('{"model": "/opt/ml/additional-model-data-sources/draft"}', '{"model": "/ch/draft"}'),
        ('{"model": "/opt/ml/additional-model-data-sources"}', '{"model": "/ch"}'),
        ("--model=/opt/ml/additional-model-data-sources/a", "--model=/ch/a"),
        ("/opt/ml/additional-model-data-sources/a:/opt/ml/additional-model-data-sources/b", "/ch/a:/ch/b"),
        ("file:///opt/ml/additional-model-data-sources/draft", "file:///ch/draft"),
        # Not AWS's folder: a longer name beside it, or the same words under another folder.
        ("/opt/ml/additional-model-data-sources-old", "/opt/ml/additional-model-data-sources-old"),
        (
            "/opt/ml/additional-model-data-sources-old/draft",
            "/opt/ml/additional-model-data-sources-old/draft",
        ),
        ("/opt/ml/additional-model-data-sources.bak", "/opt/ml/additional-model-data-sources.bak"),
        (
            "/backup/opt/ml/additional-model-data-sources/draft",
            "/backup/opt/ml/additional-model-data-sources/draft",
        ),
        (
            "/backup//opt/ml/additional-model-data-sources/draft",
            "/backup//opt/ml/additional-model-data-sources/draft",
        ),
    ],
)
def test_a_value_names_the_channels_folder_only_as_a_whole_path(value: str, local: str) -> None:
    assert local_value(value, Path("/ch")) == local
    assert local_value(value, None) == value
