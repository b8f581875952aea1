"""``model_data.source: model-package`` against moto's model registry: an unapproved version is refused by the
emulator's deploy and by ``smkit deploy`` before the CDK CLI runs, naming it and how to approve it; an approved
one deploys (the real CDK CLI into moto) with the template naming the version, and the local endpoint serves it
with the image and model data the registry names, answering boto3."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from deploy_support import REPO

from smkit.config import load_deployment
from smkit.emulator import MotoServer, child_environment, emulator_cli, ensure_bootstrapped
from smkit.emulator.deploy import deploy_config, destroy_app
from smkit.local import LocalEndpoint, LocalEndpointError
from smkit.model_packages import RegistryError, require_deployable
from smkit.release.deploy import approved_packages
from smkit.release.shell import ReleaseError

pytestmark = pytest.mark.slow

# The package's image: AWS's XGBoost image of the emulator's region (the example model's own inference.py
# holds every hook, so the local run needs nothing of the image but its Python).
IMAGE = "683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-xgboost:1.7-1"
ACCOUNT = "123456789012"
# The containers run in this interpreter, which has the example model's packages: the image's own
# environment (its Python 3.10 and XGBoost) is smkit.modelenv's subject, tested on its own.
LOCAL: dict[str, Any] = {"model_envs": False}


def _registered(aws: MotoServer, *, status: str) -> tuple[str, str, str]:
    """A bucket holding the example model under churn/, and a package group with one version of it in
    ``status``: (group, version ARN, bucket)."""
    s3 = boto3.client("s3", endpoint_url=aws.endpoint_url)
    bucket = f"registry-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    s3.upload_file(str(REPO / "build" / "model.tar.gz"), bucket, "churn/job-1/output/model.tar.gz")
    sagemaker = boto3.client("sagemaker", endpoint_url=aws.endpoint_url)
    group = f"churn-{uuid.uuid4().hex[:8]}"
    sagemaker.create_model_package_group(ModelPackageGroupName=group)
    arn = sagemaker.create_model_package(
        ModelPackageGroupName=group,
        ModelApprovalStatus=status,
        InferenceSpecification={
            "Containers": [
                {"Image": IMAGE, "ModelDataUrl": f"s3://{bucket}/churn/job-1/output/model.tar.gz"}
            ],
            "SupportedContentTypes": ["text/csv"],
            "SupportedResponseMIMETypes": ["application/json"],
        },
    )["ModelPackageArn"]
    return group, arn, bucket


def _config(tmp_path: Path, package: str, bucket: str) -> Path:
    data = yaml.safe_load((REPO / "config" / "realtime.yaml").read_text())
    data["name"] = f"registry-{uuid.uuid4().hex[:6]}"
    data["image"] = {"source": "dlc", "uri": IMAGE}
    data["endpoint"]["variants"] = data["endpoint"]["variants"][:1]
    data["endpoint"]["variants"][0]["initial_weight"] = 1
    data["model"]["containers"][0]["model_data"] = {
        "source": "model-package",
        "package": package,
        "uri": f"s3://{bucket}/churn/",
    }
    data.pop("pipeline", None)
    path = tmp_path / "registry.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_an_unapproved_package_is_refused_naming_it_and_how_to_approve(
    aws: MotoServer, tmp_path: Path
) -> None:
    group, arn, bucket = _registered(aws, status="PendingManualApproval")
    config = _config(tmp_path, f"{group}/1", bucket)
    approve = f"aws sagemaker update-model-package --model-package-arn {arn} --model-approval-status Approved"
    cli = emulator_cli(REPO, child_environment(aws.endpoint_url))
    with pytest.raises(RegistryError) as refused:
        deploy_config(aws, cli, config, tmp_path)  # refused before the CLI starts
    assert f"model package {arn} is PendingManualApproval" in str(refused.value)
    assert approve in str(refused.value)
    assert not (tmp_path / f"cdk.out.{config.stem}").exists()
    with pytest.raises(ReleaseError, match="PendingManualApproval") as release:
        approved_packages(load_deployment(config))  # smkit deploy's gate, boto3 env -> moto
    assert approve in str(release.value)


def test_a_package_whose_image_or_data_is_not_the_configs_is_refused(aws: MotoServer, tmp_path: Path) -> None:
    group, arn, _ = _registered(aws, status="Approved")
    deployment = load_deployment(_config(tmp_path, f"{group}/1", "another-bucket"))
    with pytest.raises(RegistryError, match=r"model data s3://registry-.* is not under model_data.uri"):
        require_deployable(
            deployment,
            boto3.client("sagemaker", endpoint_url=aws.endpoint_url),
            partition="aws",
            region="us-east-1",
            account=ACCOUNT,
        )
    missing = _config(tmp_path, f"{group}/7", "another-bucket")
    with pytest.raises(RegistryError, match=rf"model-package/{group}/7: the registry answered"):
        require_deployable(
            load_deployment(missing),
            boto3.client("sagemaker", endpoint_url=aws.endpoint_url),
            partition="aws",
            region="us-east-1",
            account=ACCOUNT,
        )
    with pytest.raises(LocalEndpointError, match=rf"model-package/{group}/7: the registry answered"):
        LocalEndpoint(missing, root=tmp_path, s3_endpoint_url=aws.endpoint_url)


def _invoke(endpoint: LocalEndpoint) -> list[Any]:
    sample = REPO / "model_code" / "tabular" / "samples"
    answer = endpoint.client().invoke_endpoint(
        EndpointName=endpoint.name,
        ContentType="text/csv",
        Accept="application/json",
        Body=(sample / "request.csv").read_bytes(),
    )
    expected = json.loads((sample / "expected.json").read_text())
    predictions = json.loads(answer["Body"].read())["predictions"]
    assert predictions == pytest.approx(expected["predictions"], rel=expected["rtol"])
    return list(predictions)


@pytest.mark.usefixtures("validated_elsewhere")
def test_an_approved_package_deploys_and_is_served_locally_from_the_registry(
    aws: MotoServer, tmp_path: Path
) -> None:
    group, arn, bucket = _registered(aws, status="PendingManualApproval")
    config = _config(tmp_path, f"{group}/1", bucket)
    # A version under review is served locally (trying it is part of the review); only deploys need approval.
    with LocalEndpoint(
        config, root=tmp_path, s3_endpoint_url=aws.endpoint_url, log_dir=tmp_path, **LOCAL
    ) as pending:
        _invoke(pending)
    sagemaker = boto3.client("sagemaker", endpoint_url=aws.endpoint_url)
    sagemaker.update_model_package(ModelPackageArn=arn, ModelApprovalStatus="Approved")

    cli = emulator_cli(REPO, child_environment(aws.endpoint_url))
    ensure_bootstrapped(aws, cli, tmp_path / "bootstrap")
    app = deploy_config(aws, cli, config, tmp_path)
    try:
        [model_arn] = app.physical_ids("AWS::SageMaker::Model")
        model = sagemaker.describe_model(ModelName=model_arn.rsplit("/", 1)[1])
        assert model["PrimaryContainer"]["ModelPackageName"] == arn
        assert "Image" not in model["PrimaryContainer"]
    finally:
        destroy_app(cli, app)

    with LocalEndpoint(
        config, root=tmp_path, s3_endpoint_url=aws.endpoint_url, log_dir=tmp_path, **LOCAL
    ) as endpoint:
        [container] = endpoint.deployment.containers
        assert (container.image.uri, container.model_data.uri) == (
            IMAGE,
            f"s3://{bucket}/churn/job-1/output/model.tar.gz",
        )
        _invoke(endpoint)


def test_a_release_records_the_version_and_a_rollback_pins_it(tmp_path: Path) -> None:
    from smkit.release.history import Release, _deployed_container
    from smkit.release.rollback import rollback_config

    arn = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:model-package/churn/2"
    recorded = _deployed_container({"ModelPackageName": arn, "Mode": "SingleModel"})
    assert (recorded.image, recorded.model_data, recorded.data_type) == (arn, None, "model-package")
    data = yaml.safe_load(_config(tmp_path, "churn/3", "registry-bucket").read_text())
    release = Release(endpoint="e", containers=(recorded,), deployed_at="2026-11-29T00:00:00Z")
    pinned = rollback_config(data, release, root=tmp_path)
    assert pinned["model"]["containers"][0]["model_data"]["package"] == arn
    assert pinned["image"] == data["image"]
