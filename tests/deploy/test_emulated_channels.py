"""A config with additional model data sources deployed into the emulator as ``smkit emulator deploy`` does it
(``smkit.emulator.deploy_config``): the model is the ``Custom::SageMakerModel`` that CreateModel makes,
DescribeModel returns its channels, each channel's data is in S3 where the model says, the execution role may
read it, the endpoint reaches InService; a changed channel is a new model (the old one deleted), and a destroy
removes it. A new CDK app: under the ``frameworks`` marker (make test-frameworks)."""

from __future__ import annotations

import io
import tarfile
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy_support import REPO, deployed_endpoint, variant_models

from smkit.config import absolute_paths
from smkit.emulator import CdkCli, MotoServer, ensure_bootstrapped
from smkit.emulator.deploy import deploy_config, destroy_app

pytestmark = pytest.mark.frameworks


def _tree(tmp_path: Path, bucket: str) -> Path:
    draft = tmp_path / "draft"
    draft.mkdir()
    (draft / "config.json").write_text('{"model_type": "draft"}')
    archive = tmp_path / "lookup.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        data = b"a b c\n"
        info = tarfile.TarInfo("labels.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    config: dict[str, Any] = absolute_paths(
        yaml.safe_load((REPO / "config" / "realtime.yaml").read_text()), REPO / "config"
    )
    config["name"] = f"channels-{uuid.uuid4().hex[:6]}"
    config.pop("pipeline")
    container = config["model"]["containers"][0]
    container["additional_model_data"] = [
        {"channel": "draft", "source": "prefix", "path": str(draft)},
        {"channel": "lookup", "source": "archive", "path": str(archive)},
        {"channel": "heads", "source": "s3", "uri": f"s3://{bucket}/heads/v1/"},
    ]
    container["environment"]["DRAFT_MODEL"] = "/opt/ml/additional-model-data-sources/draft"
    source = tmp_path / "channels.yaml"
    source.write_text(yaml.safe_dump(config))
    return source


def _model(emulator: MotoServer) -> tuple[str, dict[str, Any]]:
    endpoint = deployed_endpoint(emulator, "Channels")
    assert endpoint["EndpointStatus"] == "InService"
    [name] = set(variant_models(emulator, endpoint))
    return name, emulator.client("sagemaker").describe_model(ModelName=name)


def _objects(emulator: MotoServer, uri: str) -> list[str]:
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    listed = emulator.client("s3").list_objects_v2(Bucket=bucket, Prefix=key).get("Contents", [])
    return [o["Key"][len(key) :] for o in listed]


def test_a_config_with_channels_deploys_updates_and_is_destroyed(
    emulator: MotoServer, cdk: CdkCli, tmp_path: Path
) -> None:
    ensure_bootstrapped(emulator, cdk, tmp_path / "bootstrap")
    bucket = f"heads-{uuid.uuid4().hex[:12]}"
    emulator.client("s3").create_bucket(Bucket=bucket)
    emulator.client("s3").put_object(Bucket=bucket, Key="heads/v1/heads.safetensors", Body=b"h")
    source = _tree(tmp_path, bucket)

    app = deploy_config(emulator, cdk, source, tmp_path / "work")
    assert [s.resource_type for s in app.skipped if "SageMaker" in s.resource_type] == []
    name, model = _model(emulator)
    assert app.physical_ids("Custom::SageMakerModel") == [name]
    assert app.physical_ids("AWS::SageMaker::Model") == []
    channels = {
        c["ChannelName"]: c["S3DataSource"] for c in model["PrimaryContainer"]["AdditionalModelDataSources"]
    }
    assert [(c["S3DataType"], c["CompressionType"]) for c in channels.values()] == [
        ("S3Prefix", "None"),
        ("S3Object", "Gzip"),
        ("S3Prefix", "None"),
    ]
    assert _objects(emulator, channels["draft"]["S3Uri"]) == ["config.json"]
    assert channels["lookup"]["S3Uri"].endswith("/lookup.tar.gz") and _objects(
        emulator, channels["lookup"]["S3Uri"]
    )
    assert channels["heads"]["S3Uri"] == f"s3://{bucket}/heads/v1/"
    assert (
        model["PrimaryContainer"]["Environment"]["DRAFT_MODEL"]
        == "/opt/ml/additional-model-data-sources/draft"
    )

    # The execution role reads the channel already in S3 (its statement names the prefix).
    role = model["ExecutionRoleArn"].rsplit("/", 1)[1]
    iam = emulator.client("iam")
    documents = [
        iam.get_policy_version(
            PolicyArn=p["PolicyArn"],
            VersionId=iam.get_policy(PolicyArn=p["PolicyArn"])["Policy"]["DefaultVersionId"],
        )
        for p in iam.list_attached_role_policies(RoleName=role)["AttachedPolicies"]
    ]
    assert f"arn:aws:s3:::{bucket}/heads/v1/*" in str(documents)

    # A changed channel is new data under a new prefix, and the model names it (the emulator keeps the model's
    # name, smkit/emulator/moto_api_model.py; AWS gives a new one and deletes the old model).
    (tmp_path / "draft" / "config.json").write_text('{"model_type": "draft", "layers": 2}')
    app = deploy_config(emulator, cdk, source, tmp_path / "work")
    same, updated = _model(emulator)
    draft = updated["PrimaryContainer"]["AdditionalModelDataSources"][0]["S3DataSource"]["S3Uri"]
    assert (
        same == name and draft != channels["draft"]["S3Uri"] and _objects(emulator, draft) == ["config.json"]
    )

    destroy_app(cdk, app)
    assert name not in {m["ModelName"] for m in emulator.client("sagemaker").list_models()["Models"]}
