"""``model_data.source: s3``: model data already in S3, in the forms SageMaker accepts."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from config_harness import raw

from smkit.config import ConfigError, parse_config

KEY = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
FIELD = "model.containers[0].model_data"


def _with(base: str, model_data: dict[str, Any], **top: Any) -> dict[str, Any]:
    data = copy.deepcopy(raw(base))
    data["model"]["containers"][0]["model_data"] = model_data
    data.update(top)
    return data


@pytest.mark.parametrize(
    ("base", "uri"),
    [
        ("realtime.yaml", "s3://my-models/training/job-1/output/model.tar.gz"),
        ("realtime.yaml", "s3://my-models/llm/weights/"),
        ("multi-model.yaml", "s3://my-models/mme/"),
    ],
)
def test_s3_model_data_is_accepted(base: str, uri: str) -> None:
    cfg = parse_config(
        _with(base, {"source": "s3", "uri": uri, "kms_key_arn": KEY}, region="eu-west-1"), source=base
    )
    data = cfg.model.containers[0].model_data
    assert (data.source, data.uri, data.kms_key_arn, data.path) == ("s3", uri, KEY, None)


INVALID = [
    ("realtime.yaml", {"source": "s3"}, "uri", None, "source s3 needs uri"),
    ("realtime.yaml", {"source": "s3", "uri": "https://my-models.s3.amazonaws.com/m.tar.gz"}, "uri",
     "https://my-models.s3.amazonaws.com/m.tar.gz", "use s3://BUCKET/KEY.tar.gz"),
    ("realtime.yaml", {"source": "s3", "uri": "s3://my-models"}, "uri", "s3://my-models",
     "use s3://BUCKET/KEY.tar.gz or s3://BUCKET/PREFIX/"),
    ("realtime.yaml", {"source": "s3", "uri": "s3://My_Models/model.tar.gz"}, "uri",
     "s3://My_Models/model.tar.gz", "lowercase bucket name"),
    ("realtime.yaml", {"source": "s3", "uri": "s3://my-models/model.zip"}, "uri", "s3://my-models/model.zip",
     "must be a gzip-compressed tar ending .tar.gz"),
    ("realtime.yaml", {"source": "s3", "uri": "s3://my-models/weights"}, "uri", "s3://my-models/weights",
     "add the trailing /"),
    ("multi-model.yaml", {"source": "s3", "uri": "s3://my-models/mme/a.tar.gz"}, "uri",
     "s3://my-models/mme/a.tar.gz", "end the uri with /"),
    ("realtime.yaml", {"source": "s3", "uri": "s3://my-models/m.tar.gz", "kms_key_arn": "alias/models"},
     "kms_key_arn", "alias/models", "give arn:aws:kms:REGION:ACCOUNT:key/KEY-ID"),
    ("realtime.yaml", {"source": "s3", "uri": "s3://my-models/m.tar.gz",
                       "kms_key_arn": KEY.replace(":key/", ":alias/")},
     "kms_key_arn", KEY.replace(":key/", ":alias/"), "an alias ARN grants nothing"),
    ("realtime.yaml", {"source": "s3", "uri": "s3://my-models/m.tar.gz",
                       "kms_key_arn": KEY.replace("eu-west-1", "us-east-1")},
     "kms_key_arn", KEY.replace("eu-west-1", "us-east-1"), "copy the model data to a eu-west-1 bucket"),
    ("realtime.yaml", {"source": "s3", "uri": "s3://my-models/m.tar.gz", "path": "build/model.tar.gz"},
     "path", "build/model.tar.gz", "remove path"),
    ("realtime.yaml", {"source": "archive", "path": "model.tar.gz", "uri": "s3://my-models/m.tar.gz"},
     "uri", "s3://my-models/m.tar.gz", "applies only to source: s3"),
    ("realtime.yaml", {"source": "archive"}, "path", None, "needs a local path"),
]  # fmt: skip


@pytest.mark.parametrize(("base", "model_data", "field", "value", "fix"), INVALID)
def test_invalid_s3_model_data_names_field_value_and_fix(
    base: str, model_data: dict[str, Any], field: str, value: Any, fix: str
) -> None:
    with pytest.raises(ConfigError) as excinfo:
        parse_config(_with(base, model_data, region="eu-west-1"), source=f"config/{base}")
    issues = [i for i in excinfo.value.issues if i.path == f"{FIELD}.{field}"]
    assert issues, str(excinfo.value)
    assert any(i.value == value and fix in i.message for i in issues), str(excinfo.value)


def test_uri_rules_cite_the_aws_pages() -> None:
    with pytest.raises(ConfigError) as excinfo:
        parse_config(_with("realtime.yaml", {"source": "s3", "uri": "s3://my-models/m.zip"}), source="c")
    message = str(excinfo.value)
    assert "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ContainerDefinition.html" in message
    assert "https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_S3ModelDataSource.html" in message
