"""Model data already in S3 (``model_data.source: s3``) deployed into the emulator: the object a training
job would have written is uploaded to moto's S3, the config points at it, the endpoint reaches InService
with the Model naming that object, and nothing is copied.

Named test_day2_* so it runs before test_deploy.py's final destroy-everything test; it removes what it adds.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy_support import REPO, deployed_endpoint, synth_assembly, variant_models

from smkit.config import absolute_paths
from smkit.emulator import CdkCli, CdkError, MotoServer, ensure_bootstrapped
from smkit.emulator.deploy import with_server_traceback


def _config(tmp_path: Path, uri: str) -> Path:
    data: dict[str, Any] = absolute_paths(
        yaml.safe_load((REPO / "config" / "realtime.yaml").read_text()), REPO / "config"
    )
    data["name"] = "tabular-in-s3"
    data["model"]["containers"][0]["model_data"] = {"source": "s3", "uri": uri}
    source = tmp_path / "in-s3.yaml"
    source.write_text(yaml.safe_dump(data))
    return source  # synth_assembly applies the emulated deploy's image tag


def test_model_data_in_s3_deploys_to_in_service(emulator: MotoServer, cdk: CdkCli, tmp_path: Path) -> None:
    ensure_bootstrapped(emulator, cdk, tmp_path / "bootstrap")
    s3 = emulator.client("s3")
    bucket = f"training-output-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    key = "xgb-2026-01/output/model.tar.gz"
    s3.upload_file(str(REPO / "build" / "model.tar.gz"), bucket, key)
    uri = f"s3://{bucket}/{key}"

    assembly = synth_assembly([_config(tmp_path, uri)], tmp_path / "cdk.out")
    try:
        cdk.deploy_assembly(assembly=assembly.path)
        sagemaker = emulator.client("sagemaker")
        endpoint = deployed_endpoint(emulator, "TabularInS3")
        assert endpoint["EndpointStatus"] == "InService"
        model_names = set(variant_models(emulator, endpoint))
        [names] = assembly.stack_names.values()
        resources = emulator.client("cloudformation").list_stack_resources(StackName=names["serving"])
        types = {r["ResourceType"] for r in resources["StackResourceSummaries"]}
        assert "Custom::CDKBucketDeployment" not in types and "AWS::SageMaker::Model" in types
        for name in model_names:
            assert sagemaker.describe_model(ModelName=name)["PrimaryContainer"]["ModelDataUrl"] == uri
    except CdkError as exc:
        pytest.fail(with_server_traceback(str(exc), emulator))
    finally:
        cdk.destroy(assembly=assembly.path)
