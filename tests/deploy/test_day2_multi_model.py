"""Day 2 of a multi-model endpoint in the emulator: new model data is a new content-hashed prefix, and the
execution role still reads the previous prefix, which the old fleet serves from during the blue/green update
(and a rolled-back one after it): with ``cache: disabled`` every request loads its model from S3 again.

Named test_day2_* so it runs before test_deploy.py's final destroy-everything test; it removes what it adds.
"""

from __future__ import annotations

import fnmatch
import json
import shutil
from pathlib import Path
from typing import Any

import yaml
from deploy_support import REPO, deployed_endpoint, synth_assembly, variant_models
from test_day2_update import _delete_retained, _retained

from smkit.config import absolute_paths
from smkit.emulator import CdkCli, MotoServer

PREFIX = "TabularMmeDay2"


def _config(tmp_path: Path, name: str, models: Path) -> Path:
    data: dict[str, Any] = absolute_paths(
        yaml.safe_load((REPO / "config" / "multi-model.yaml").read_text()), REPO / "config"
    )
    data["name"] = "tabular-mme-day2"
    data["model"]["containers"][0]["model_data"]["path"] = str(models)
    data["model"]["containers"][0]["model_data"]["cache"] = "disabled"
    source = tmp_path / name / "mme-day2.yaml"
    source.parent.mkdir()
    source.write_text(yaml.safe_dump(data))
    return source


def _model_prefix(emulator: MotoServer) -> str:
    first = variant_models(emulator, deployed_endpoint(emulator, PREFIX))[0]
    model = emulator.client("sagemaker").describe_model(ModelName=first)
    url: str = model["PrimaryContainer"]["ModelDataUrl"]
    return url


def _role_allows_get(emulator: MotoServer, object_arn: str) -> bool:
    """Whether an Allow statement of the execution role's managed policies grants s3:GetObject on the ARN."""
    iam = emulator.client("iam")
    roles = [
        r["RoleName"]
        for r in iam.list_roles()["Roles"]
        if r["RoleName"].startswith(f"{PREFIX}DevServing-ExecutionRole")
    ]
    statements: list[dict[str, Any]] = []
    for role in roles:
        for attached in iam.list_attached_role_policies(RoleName=role)["AttachedPolicies"]:
            policy = iam.get_policy(PolicyArn=attached["PolicyArn"])["Policy"]
            version = iam.get_policy_version(
                PolicyArn=attached["PolicyArn"], VersionId=policy["DefaultVersionId"]
            )
            document = version["PolicyVersion"]["Document"]
            document = json.loads(document) if isinstance(document, str) else document
            statements += document["Statement"]
    for s in statements:
        actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
        resources = s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]]
        if (
            s["Effect"] == "Allow"
            and "s3:GetObject" in actions
            and any(fnmatch.fnmatchcase(object_arn, r) for r in resources)
        ):
            return True
    return False


def test_old_fleet_still_reads_its_models_after_new_model_data(
    deployed: object, emulator: MotoServer, cdk: CdkCli, tmp_path: Path
) -> None:
    models = tmp_path / "models"
    shutil.copytree(REPO / "build" / "models", models)
    first = synth_assembly([_config(tmp_path, "first", models)], tmp_path / "first.out")
    cdk.deploy_assembly(assembly=first.path)
    old_url = _model_prefix(emulator)
    bucket, _, old_prefix = old_url[len("s3://") :].partition("/")

    shutil.copy(models / "iris.tar.gz", models / "iris-v2.tar.gz")  # a new model: new content hash
    second = synth_assembly([_config(tmp_path, "second", models)], tmp_path / "second.out")
    cdk.deploy_assembly(assembly=second.path)
    new_url = _model_prefix(emulator)
    new_prefix = new_url.partition(f"s3://{bucket}/")[2]
    assert new_prefix != old_prefix

    s3 = emulator.client("s3")
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=old_prefix)["Contents"]
    old_keys = sorted(o["Key"] for o in listed)
    assert [k.rsplit("/", 1)[1] for k in old_keys] == ["iris.tar.gz", "tabular.tar.gz"]  # never pruned
    for key in old_keys:  # the old fleet, loading a model it has not cached, may read it
        assert _role_allows_get(emulator, f"arn:aws:s3:::{bucket}/{key}"), key
    assert _role_allows_get(emulator, f"arn:aws:s3:::{bucket}/{new_prefix}iris-v2.tar.gz")
    assert not _role_allows_get(emulator, f"arn:aws:s3:::{bucket}/data-capture/x.jsonl")

    retained = _retained(emulator, PREFIX)
    cdk.destroy(assembly=second.path)
    _delete_retained(emulator, retained)
