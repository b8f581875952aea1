"""Every config in config/ deployed into moto by the real CDK CLI, checked through boto3, then destroyed.

What moto cannot create is not hidden: ``smkit.emulator.inventory.reconcile`` fails the deploy for any
template resource moto skipped unless its type is listed in MOTO_SKIPS with the reason, and the tests
below assert the SageMaker resources are never among the skipped ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from deploy_support import CONCURRENCY, CONFIGS, Assembly, DeployedConfig

from smkit.config import Container, load_config
from smkit.emulator import (
    EMULATED_IMAGE_TAG,
    MOTO_SKIPS,
    CdkCli,
    MotoServer,
    assembly_stacks,
    live_stacks,
    retained_resources,
    sagemaker_resources,
)

STEMS = [path.stem for path in CONFIGS]
# Configs with one SageMaker Model; inference components (one model each) and shadow variants (their own
# model) are checked in test_deploy_components.py.
ONE_MODEL = [
    path.stem
    for path in CONFIGS
    if (config := load_config(path)).endpoint.type != "inference-components"
    and not config.endpoint.shadow_variants
]
SAGEMAKER = ("AWS::SageMaker::Model", "AWS::SageMaker::EndpointConfig", "AWS::SageMaker::Endpoint")


def _name(arn: str) -> str:
    return arn.rsplit("/", 1)[-1]


def _one(deployed: DeployedConfig, resource_type: str) -> str:
    [physical_id] = deployed.serving.physical_ids(resource_type)
    return _name(physical_id)


def _model(emulator: MotoServer, deployed: DeployedConfig) -> dict[str, Any]:
    model: dict[str, Any] = emulator.client("sagemaker").describe_model(
        ModelName=_one(deployed, "AWS::SageMaker::Model")
    )
    return model


def test_every_config_is_deployed(deployed: dict[str, DeployedConfig]) -> None:
    assert sorted(deployed) == sorted(STEMS)


@pytest.mark.parametrize("stem", STEMS)
def test_sagemaker_resources_are_created_not_skipped(stem: str, deployed: dict[str, DeployedConfig]) -> None:
    serving = deployed[stem].serving
    config = deployed[stem].config
    models = 1 + len(config.endpoint.shadow_variants)
    if config.endpoint.type == "inference-components":
        models = len(config.model.containers)
    assert len(serving.physical_ids("AWS::SageMaker::Model")) == models
    for resource_type in SAGEMAKER[1:]:
        assert len(serving.physical_ids(resource_type)) == 1, resource_type
    assert all(s.resource_type in MOTO_SKIPS for s in serving.skipped)
    assert not {s.resource_type for s in serving.skipped} & set(SAGEMAKER)


@pytest.mark.parametrize("stem", ONE_MODEL)
def test_model_has_the_configured_containers(
    stem: str, deployed: dict[str, DeployedConfig], emulator: MotoServer
) -> None:
    d = deployed[stem]
    model = _model(emulator, d)
    containers = [model["PrimaryContainer"]] if model.get("PrimaryContainer") else model["Containers"]
    assert len(containers) == len(d.config.model.containers)
    # A dlc image (config/tf-insurance.yaml) is deployed as named; a build image as the emulated ECR tag.
    if d.config.image.source == "dlc":
        image = d.config.image.uri
        assert d.ecr is None  # no unused repository stack for a dlc image
    else:
        assert d.ecr is not None
        image = f"{d.ecr.outputs['RepositoryUri']}:{EMULATED_IMAGE_TAG}"
    for spec, got in zip(d.config.model.containers, containers, strict=True):
        assert got["Image"] == image
        assert spec.environment.items() <= got.get("Environment", {}).items()
        assert got.get("ContainerHostname") == spec.hostname
        _check_model_data(spec, got, d, emulator)
    assert model["EnableNetworkIsolation"] is d.config.model.network_isolation
    assert model["ExecutionRoleArn"] == d.serving.outputs["ExecutionRoleArn"]
    if d.config.model.inference_mode is not None:
        assert model["InferenceExecutionConfig"] == {"Mode": d.config.model.inference_mode.capitalize()}


def _check_model_data(spec: Container, got: dict[str, Any], d: DeployedConfig, emulator: MotoServer) -> None:
    bucket = d.serving.outputs["BucketName"]
    if spec.model_data.source == "prefix":
        url = got["ModelDataSource"]["S3DataSource"]["S3Uri"]
        source = got["ModelDataSource"]["S3DataSource"]
        assert (source["S3DataType"], source["CompressionType"]) == ("S3Prefix", "None")
    else:
        url = got["ModelDataUrl"]
    assert url.startswith(f"s3://{bucket}/models/")
    key = urlparse(url).path.lstrip("/")
    s3 = emulator.client("s3")
    if spec.model_data.source == "archive":
        # The copy (Custom::CDKBucketDeployment, smkit.emulator.moto_bucket_deployment) really put the
        # archive there, under the bucket's default encryption: the deployment's key.
        head = s3.head_object(Bucket=bucket, Key=key)
        assert head["ContentLength"] == Path(spec.model_data.path).stat().st_size
        [key_arn] = d.serving.physical_ids("AWS::KMS::Key") or [None]
        assert head["ServerSideEncryption"] == "aws:kms"
        if key_arn is not None:
            assert key_arn.endswith(head["SSEKMSKeyId"].rsplit("/", 1)[-1])
    else:
        assert url.endswith("/")
        listed = s3.list_objects_v2(Bucket=bucket, Prefix=key).get("Contents", [])
        assert listed, f"nothing copied under {url}"
        if spec.model_data.source == "multi-model":
            assert got["Mode"] == "MultiModel"
            assert all(item["Key"].endswith(".tar.gz") for item in listed)


@pytest.mark.parametrize("stem", ONE_MODEL)
def test_endpoint_config_has_the_configured_variants(
    stem: str, deployed: dict[str, DeployedConfig], emulator: MotoServer
) -> None:
    d = deployed[stem]
    spec = d.config.endpoint
    config = emulator.client("sagemaker").describe_endpoint_config(
        EndpointConfigName=_one(d, "AWS::SageMaker::EndpointConfig")
    )
    variants = config["ProductionVariants"]
    model_name = _one(d, "AWS::SageMaker::Model")
    assert {v["ModelName"] for v in variants} == {model_name}
    if spec.serverless is not None:
        [variant] = variants
        assert variant["VariantName"] == spec.serverless.variant_name
        serverless = variant["ServerlessConfig"]
        assert serverless["MemorySizeInMB"] == spec.serverless.memory_size_mb
        assert serverless["MaxConcurrency"] == spec.serverless.max_concurrency
        assert serverless.get("ProvisionedConcurrency") == spec.serverless.provisioned_concurrency
    else:
        got = [
            (v["VariantName"], v["InstanceType"], v["InitialInstanceCount"], v["InitialVariantWeight"])
            for v in variants
        ]
        want = [(v.name, v.instance_type, v.initial_instance_count, v.initial_weight) for v in spec.variants]
        assert got == want
    if d.config.security.kms.create:
        assert config["KmsKeyId"] == d.serving.outputs["KmsKeyArn"]
    if spec.async_ is not None:
        _check_async(config["AsyncInferenceConfig"], d)
    if spec.data_capture is not None and spec.data_capture.enabled:
        capture = config["DataCaptureConfig"]
        assert capture["EnableCapture"] is True
        assert capture["InitialSamplingPercentage"] == spec.data_capture.sampling_percentage
        modes = {option["CaptureMode"] for option in capture["CaptureOptions"]}
        assert modes == {mode.capitalize() for mode in spec.data_capture.capture}


def _check_async(got: dict[str, Any], d: DeployedConfig) -> None:
    spec = d.config.endpoint.async_
    assert spec is not None
    bucket = d.serving.outputs["BucketName"]
    output = got["OutputConfig"]
    assert output["S3OutputPath"].startswith(f"s3://{bucket}/{spec.output_prefix}")
    assert output["S3FailurePath"].startswith(f"s3://{bucket}/{spec.failure_prefix}")
    topics = set(d.serving.physical_ids("AWS::SNS::Topic"))
    if spec.notifications:
        notification = output["NotificationConfig"]
        assert {notification["SuccessTopic"], notification["ErrorTopic"]} <= topics
    if spec.max_concurrent_invocations_per_instance is not None:
        client = got["ClientConfig"]
        assert client["MaxConcurrentInvocationsPerInstance"] == spec.max_concurrent_invocations_per_instance


@pytest.mark.parametrize("stem", STEMS)
def test_endpoint_is_in_service(stem: str, deployed: dict[str, DeployedConfig], emulator: MotoServer) -> None:
    d = deployed[stem]
    endpoint = emulator.client("sagemaker").describe_endpoint(
        EndpointName=_one(d, "AWS::SageMaker::Endpoint")
    )
    assert endpoint["EndpointStatus"] == "InService"
    assert endpoint["EndpointConfigName"] == _one(d, "AWS::SageMaker::EndpointConfig")
    spec = d.config.endpoint
    names = [spec.serverless.variant_name] if spec.serverless else [v.name for v in spec.variants]
    assert [v["VariantName"] for v in endpoint["ProductionVariants"]] == names
    # --method=direct deploys return the stack Outputs CI reads.
    assert d.serving.outputs["EndpointName"] == endpoint["EndpointName"]
    assert d.serving.outputs["VariantNames"] == ",".join(names)


def test_alarms_are_created_through_the_cloudwatch_adapter(
    deployed: dict[str, DeployedConfig], emulator: MotoServer
) -> None:
    d = deployed["realtime"]
    alarms = d.serving.physical_ids("AWS::CloudWatch::Alarm")
    assert alarms
    found = emulator.client("cloudwatch").describe_alarms(AlarmNames=alarms)["MetricAlarms"]
    assert {a["AlarmName"] for a in found} == set(alarms)
    namespaces = {a.get("Namespace") for a in found if "Namespace" in a}
    # Error-rate alarms are metric math over two metrics of the endpoint.
    namespaces |= {
        m["MetricStat"]["Metric"]["Namespace"]
        for a in found
        for m in a.get("Metrics", [])
        if "MetricStat" in m
    }
    assert namespaces == {"AWS/SageMaker"}
    assert any(a.get("Metrics") for a in found)


def test_destroy_leaves_nothing_behind(
    deployed: dict[str, DeployedConfig], emulator: MotoServer, cdk: CdkCli, assembly: Assembly
) -> None:
    """``cdk destroy --all`` of every config: of the resources the stacks created, only the retained remain.

    Last in this module on purpose (pytest keeps file order). The session's moto server is shared with
    other tests, so the check covers exactly the resources these stacks created.
    """
    created = [
        (stack.name, resource)
        for config in deployed.values()
        for stack in (config.ecr, config.serving)
        if stack is not None
        for resource in stack.resources
    ]
    retained = {
        (name, logical_id)
        for name, template in assembly_stacks(assembly.path)
        for logical_id in retained_resources(template)
    }
    assert any(r.resource_type == "AWS::SageMaker::Endpoint" for _, r in created)
    cdk.destroy(assembly=assembly.path, concurrency=CONCURRENCY)

    stacks = {name for name, _ in assembly_stacks(assembly.path)}
    assert stacks.isdisjoint(live_stacks(emulator.client("cloudformation")))
    existing = _existing(emulator)
    left = {
        (name, r.logical_id)
        for name, r in created
        if r.resource_type in existing and _short(r.physical_id) in existing[r.resource_type]
    }
    checked = {(n, r.logical_id) for n, r in created if r.resource_type in existing}
    assert left == retained & checked


def _short(physical_id: str) -> str:
    """The name a List/Describe call reports for a physical id (SageMaker and SNS ids are ARNs)."""
    return physical_id if physical_id.startswith("arn:aws:sns:") else _name(physical_id)


def _existing(emulator: MotoServer) -> dict[str, set[str]]:
    """Resource type -> names of every such resource in the emulator (for the types the stacks create)."""
    sagemaker = sagemaker_resources(emulator.client("sagemaker"))
    cloudwatch = emulator.client("cloudwatch")
    kms = emulator.client("kms")
    return {
        "AWS::SageMaker::Model": set(sagemaker["models"]),
        "AWS::SageMaker::EndpointConfig": set(sagemaker["endpoint_configs"]),
        "AWS::SageMaker::Endpoint": set(sagemaker["endpoints"]),
        "AWS::SageMaker::InferenceComponent": {c.split(" (")[0] for c in sagemaker["inference_components"]},
        "AWS::CloudWatch::Alarm": {a["AlarmName"] for a in cloudwatch.describe_alarms()["MetricAlarms"]},
        "AWS::CloudWatch::Dashboard": {
            e["DashboardName"] for e in cloudwatch.list_dashboards()["DashboardEntries"]
        },
        "AWS::SNS::Topic": {t["TopicArn"] for t in emulator.client("sns").list_topics()["Topics"]},
        "AWS::IAM::Role": {r["RoleName"] for r in emulator.client("iam").list_roles()["Roles"]},
        "AWS::ECR::Repository": {
            r["repositoryName"] for r in emulator.client("ecr").describe_repositories()["repositories"]
        },
        "AWS::S3::Bucket": {b["Name"] for b in emulator.client("s3").list_buckets()["Buckets"]},
        "AWS::KMS::Key": {
            k["KeyId"]
            for k in kms.list_keys()["Keys"]
            if kms.describe_key(KeyId=k["KeyId"])["KeyMetadata"]["KeyState"] == "Enabled"
        },
    }
