"""Where model data lives: every source, the archive included, in the deployment's own bucket under the
deployment's key, at a content-hashed key that survives a rollback."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Template
from stack_support import ROOT, SynthesizedApp

from smkit.aws.limits import LAMBDA_EPHEMERAL_MB
from smkit.cdk.constructs.execution_role import ExecutionRole
from smkit.cdk.constructs.model_copy import HEADROOM_MB, ephemeral_storage_mb
from smkit.cdk.constructs.model_data import ModelData
from smkit.contract import MIB

ARCHIVE = ROOT / "build" / "model.tar.gz"
COPY = "Custom::CDKBucketDeployment"


def _resources(template: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_}


def _joined(value: Any) -> list[Any]:
    """The parts of an ``Fn::Join`` with an empty separator (a plain string is one part)."""
    if isinstance(value, str):
        return [value]
    separator, parts = value["Fn::Join"]
    assert separator == ""
    return list(parts)


def _data_bucket(template: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    [(logical_id, bucket)] = [
        (k, b)
        for k, b in _resources(template, "AWS::S3::Bucket").items()
        if b["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
            "ServerSideEncryptionByDefault"
        ]["SSEAlgorithm"]
        == "aws:kms"
    ]
    return logical_id, bucket


@pytest.mark.parametrize(
    "case", ["realtime", "realtime-shadow", "serverless", "multi-container", "inference-components"]
)
def test_archive_model_data_is_in_the_data_bucket_under_the_deployment_key(
    synthesized: SynthesizedApp, case: str
) -> None:
    template = synthesized.template_json(case)
    bucket_id, bucket = _data_bucket(template)
    [key_id] = _resources(template, "AWS::KMS::Key")
    default = bucket["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    assert default["ServerSideEncryptionByDefault"]["KMSMasterKeyID"] == {"Fn::GetAtt": [key_id, "Arn"]}

    copies = {
        c["Properties"]["DestinationBucketKeyPrefix"]: c["Properties"]
        for c in _resources(template, COPY).values()
    }
    urls = []
    for model in _resources(template, "AWS::SageMaker::Model").values():
        properties = model["Properties"]
        for container in [properties.get("PrimaryContainer"), *properties.get("Containers", [])]:
            if container is None:
                continue
            parts = _joined(container["ModelDataUrl"])
            assert parts[:2] == ["s3://", {"Ref": bucket_id}], parts
            key = parts[2].lstrip("/")
            prefix, name = key.rsplit("/", 1)
            assert name.endswith(".tar.gz")
            copy = copies[prefix + "/"]
            assert copy["DestinationBucketName"] == {"Ref": bucket_id}
            assert (copy["Extract"], copy["Prune"], copy["RetainOnDelete"]) == (True, False, True)
            urls.append(key)
    assert urls and len(set(urls)) == len(urls)


def test_execution_role_reads_every_release_of_the_archive_and_decrypts_with_the_key(
    synthesized: SynthesizedApp,
) -> None:
    """The role reads the container's copies of every release (models/<id>/*): the old fleet, still serving
    during a blue/green update or after a rollback, reads the archive it was started from."""
    template = synthesized.template_json("realtime")
    bucket_id, _ = _data_bucket(template)
    [key_id] = _resources(template, "AWS::KMS::Key")
    [model] = _resources(template, "AWS::SageMaker::Model").values()
    object_key = _joined(model["Properties"]["PrimaryContainer"]["ModelDataUrl"])[2]
    statements = []
    policies = {**_resources(template, "AWS::IAM::Policy"), **_resources(template, "AWS::IAM::ManagedPolicy")}
    for policy in policies.values():
        if "ExecutionRole" in str(policy["Properties"]["Roles"]):
            statements += policy["Properties"]["PolicyDocument"]["Statement"]
    reads = [
        s for s in statements if s["Action"] == "s3:GetObject" and "models/ModelData" in str(s["Resource"])
    ]
    [releases] = [_joined(s["Resource"]) for s in reads]
    assert releases == [{"Fn::GetAtt": [bucket_id, "Arn"]}, "/models/ModelDataTabular/*"]
    assert object_key.startswith("/models/ModelDataTabular/") and object_key.endswith("/model.tar.gz")
    decrypt = [s for s in statements if "kms:Decrypt" in s["Action"]]
    assert [s["Resource"] for s in decrypt] == [{"Fn::GetAtt": [key_id, "Arn"]}]


def test_archive_copy_handler_gets_ephemeral_storage_for_the_archive(synthesized: SynthesizedApp) -> None:
    need = ephemeral_storage_mb(ARCHIVE, ARCHIVE.stat().st_size)
    assert need == max(LAMBDA_EPHEMERAL_MB[0], -(-2 * ARCHIVE.stat().st_size // MIB) + HEADROOM_MB)
    functions = _resources(synthesized.template_json("realtime"), "AWS::Lambda::Function").values()
    assert [f["Properties"]["EphemeralStorage"]["Size"] for f in functions] == [need]


def test_archive_too_large_for_the_copy_handler_names_the_path_and_the_limit() -> None:
    with pytest.raises(ValueError, match=r"model_data.path .*model.tar.gz: 6000 MB .* 10240 MB"):
        ephemeral_storage_mb(ARCHIVE, 6000 * MIB)


def _archive_prefix(archive: Path) -> str:
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(account="123456789012", region="eu-west-1"))
    key = kms.Key(stack, "Key")
    bucket = s3.Bucket(stack, "Bucket", encryption=s3.BucketEncryption.KMS, encryption_key=key)
    ModelData.from_archive(archive).bind(
        stack, "ModelData", grantee=ExecutionRole(stack, "Role"), bucket=bucket
    )
    [copy] = Template.from_stack(stack).find_resources(COPY).values()
    prefix: str = copy["Properties"]["DestinationBucketKeyPrefix"]
    return prefix


def test_archive_key_is_its_content_hash_so_a_rollback_lands_on_the_same_object(tmp_path: Path) -> None:
    # A rollback downloads the recorded object under its name into a directory of its own
    # (smkit/release/rollback.py) and deploys that: the same bytes and name give the same key, whatever
    # else sat next to the original archive.
    restored = tmp_path / "restored"
    restored.mkdir()
    shutil.copy(ARCHIVE, restored / ARCHIVE.name)
    assert _archive_prefix(restored / ARCHIVE.name) == _archive_prefix(ARCHIVE)
    changed = tmp_path / "changed"
    changed.mkdir()
    (changed / ARCHIVE.name).write_bytes(ARCHIVE.read_bytes() + b"\0")
    assert _archive_prefix(changed / ARCHIVE.name) != _archive_prefix(ARCHIVE)


def test_only_the_archive_is_published_not_what_lies_next_to_it(tmp_path: Path) -> None:
    # The asset is the archive's folder filtered to the archive: hidden files (build/.package-models.lock)
    # and a same-named file in a subfolder must neither be uploaded nor change the key.
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(ARCHIVE, alone / ARCHIVE.name)
    crowded = tmp_path / "crowded"
    (crowded / ".stamps").mkdir(parents=True)
    (crowded / "release").mkdir()
    shutil.copy(ARCHIVE, crowded / ARCHIVE.name)
    (crowded / ".package-models.lock").write_text("")
    (crowded / ".stamps" / "models").write_text("1")
    (crowded / "release" / ARCHIVE.name).write_bytes(b"an older archive")
    assert _archive_prefix(crowded / ARCHIVE.name) == _archive_prefix(alone / ARCHIVE.name)
