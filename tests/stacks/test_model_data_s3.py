"""``model_data.source: s3``: the Model names the data where it is; no copy; the role reads exactly it."""

from __future__ import annotations

from typing import Any

import pytest
from stack_support import S3_ARCHIVE, S3_MME, S3_PREFIX, S3_SOURCE_KEY, SynthesizedApp

from smkit.cdk.constructs.model_copy import ephemeral_storage_mb
from smkit.contract import MIB

PARTITION = {"Ref": "AWS::Partition"}


def _resources(template: dict[str, Any], type_: str) -> list[dict[str, Any]]:
    return [r for r in template["Resources"].values() if r["Type"] == type_]


def _role_statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    statements: list[dict[str, Any]] = []
    for policy in _resources(template, "AWS::IAM::ManagedPolicy") + _resources(template, "AWS::IAM::Policy"):
        if "ExecutionRole" in str(policy["Properties"].get("Roles")):
            statements += policy["Properties"]["PolicyDocument"]["Statement"]
    return statements


def _arn(rest: str) -> dict[str, Any]:
    return {"Fn::Join": ["", ["arn:", PARTITION, f":s3:::{rest}"]]}


def _sid(statements: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in s.items() if k != "Sid"} for s in statements if s.get("Sid", "").startswith(prefix)
    ]


@pytest.mark.parametrize("case", ["realtime-s3", "async-s3-prefix", "multi-model-s3"])
def test_model_data_in_s3_is_not_copied(synthesized: SynthesizedApp, case: str) -> None:
    template = synthesized.template_json(case)
    assert _resources(template, "Custom::CDKBucketDeployment") == []
    assert _resources(template, "AWS::Lambda::Function") == []


def test_archive_in_s3_is_the_model_data_url_and_the_role_reads_exactly_it(
    synthesized: SynthesizedApp,
) -> None:
    template = synthesized.template_json("realtime-s3")
    [model] = _resources(template, "AWS::SageMaker::Model")
    container = model["Properties"]["PrimaryContainer"]
    assert container["ModelDataUrl"] == S3_ARCHIVE
    assert "ModelDataSource" not in container
    statements = _role_statements(template)
    bucket_and_key = S3_ARCHIVE.removeprefix("s3://")
    assert _sid(statements, "ReadModelData") == [
        {"Action": "s3:GetObject", "Effect": "Allow", "Resource": _arn(bucket_and_key)}
    ]
    assert _sid(statements, "DecryptModelData") == [
        {"Action": "kms:Decrypt", "Effect": "Allow", "Resource": S3_SOURCE_KEY}
    ]
    assert _sid(statements, "ListModelData") == []
    assert not [s for s in statements if "s3:ListBucket" in str(s["Action"]) and "training-output" in str(s)]


def test_prefix_in_s3_is_an_uncompressed_s3_data_source_read_and_listed_under_the_prefix(
    synthesized: SynthesizedApp,
) -> None:
    template = synthesized.template_json("async-s3-prefix")
    [model] = _resources(template, "AWS::SageMaker::Model")
    container = model["Properties"]["PrimaryContainer"]
    assert container["ModelDataSource"] == {
        "S3DataSource": {"S3Uri": S3_PREFIX, "S3DataType": "S3Prefix", "CompressionType": "None"}
    }
    assert "ModelDataUrl" not in container
    bucket, prefix = S3_PREFIX.removeprefix("s3://").split("/", 1)
    statements = _role_statements(template)
    assert _sid(statements, "ReadModelData") == [
        {"Action": "s3:GetObject", "Effect": "Allow", "Resource": _arn(f"{bucket}/{prefix}*")}
    ]
    assert _sid(statements, "ListModelData") == [
        {
            "Action": "s3:ListBucket",
            "Condition": {"StringLike": {"s3:prefix": [f"{prefix}*"]}},
            "Effect": "Allow",
            "Resource": _arn(bucket),
        }
    ]
    assert _sid(statements, "DecryptModelData") == []


def test_multi_model_prefix_in_s3_is_the_mme_model_data_url(synthesized: SynthesizedApp) -> None:
    template = synthesized.template_json("multi-model-s3")
    [model] = _resources(template, "AWS::SageMaker::Model")
    container = model["Properties"]["PrimaryContainer"]
    assert (container["ModelDataUrl"], container["Mode"]) == (S3_MME, "MultiModel")
    bucket, prefix = S3_MME.removeprefix("s3://").split("/", 1)
    assert _sid(_role_statements(template), "ReadModelData") == [
        {"Action": "s3:GetObject", "Effect": "Allow", "Resource": _arn(f"{bucket}/{prefix}*")}
    ]


def test_model_data_too_large_to_copy_names_source_s3_as_the_fix(tmp_path: Any) -> None:
    with pytest.raises(
        ValueError, match=r"10240 MB .*\(model_data: \{source: s3, uri: s3://BUCKET/KEY\.tar\.gz"
    ):
        ephemeral_storage_mb(tmp_path / "model.tar.gz", 6000 * MIB)
