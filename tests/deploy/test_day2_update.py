"""Day 2 in the emulator: a redeploy that changes an autoscaled variant's instance type keeps the endpoint's
name, for a production and for a shadow variant.

SageMaker refuses UpdateEndpoint for that change while the variant is a registered scalable target
(https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-scaling-update.html), and so does the repaired
emulator (smkit.emulator.moto_fixes): the plain deploy fails. The deploy step's documented sequence
(smkit.release.instance_type_change: deregister, update, register again with the policies) makes it pass under the same
name.

Named test_day2_* so it runs before test_deploy.py's final destroy-everything test; it removes what it adds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy_support import REPO, deployed_endpoint, synth_assembly

from smkit.config import absolute_paths
from smkit.emulator import CdkCli, CdkError, MotoServer, ensure_bootstrapped
from smkit.emulator.deploy import with_server_traceback
from smkit.release import instance_type_change
from smkit.release.assembly import stack_template


def _config(tmp_path: Path, name: str, compute_instance_type: str) -> Path:
    data: dict[str, Any] = absolute_paths(
        yaml.safe_load((REPO / "config" / "realtime.yaml").read_text()), REPO / "config"
    )
    data["name"] = "tabular-day2"
    data["endpoint"]["variants"][1]["instance_type"] = compute_instance_type
    source = tmp_path / name / "day2.yaml"
    source.parent.mkdir()
    source.write_text(yaml.safe_dump(data))
    return source  # synth_assembly applies the emulated deploy's image tag


def _deploy(
    cdk: CdkCli,
    emulator: MotoServer,
    config: Path,
    outdir: Path,
    *,
    prefix: str = "TabularDay2",
    expect_paused: tuple[str, ...] = (),
) -> Path:
    """The deploy step: deregister what UpdateEndpoint would refuse, deploy, register again."""
    assembly = synth_assembly([config], outdir)
    template = stack_template(assembly.path, f"{prefix}DevServing")
    clients = {
        "sagemaker": emulator.client("sagemaker"),
        "autoscaling": emulator.client("application-autoscaling"),
    }
    # Without the pause the update fails as on AWS: tests/deploy/test_moto_fixes_served.py shows it on a
    # template of its own (moto keeps a refused update's stack half-updated, so it is not tried here).
    paused = instance_type_change.pause(template, **clients)
    assert [p.variant for p in paused] == list(expect_paused)
    try:
        cdk.deploy_assembly(assembly=assembly.path)
    except CdkError as exc:
        pytest.fail(with_server_traceback(str(exc), emulator))
    finally:
        instance_type_change.resume(paused, **clients)
    return assembly.path


def _policies(emulator: MotoServer, prefix: str = "TabularDay2") -> list[tuple[str, str]]:
    policies = emulator.client("application-autoscaling").describe_scaling_policies(
        ServiceNamespace="sagemaker"
    )
    return sorted(
        (p["ResourceId"], p["PolicyName"]) for p in policies["ScalingPolicies"] if prefix in p["ResourceId"]
    )


def _scalable_variants(emulator: MotoServer, prefix: str = "TabularDay2") -> list[str]:
    targets = emulator.client("application-autoscaling").describe_scalable_targets(
        ServiceNamespace="sagemaker"
    )
    return sorted(t["ResourceId"] for t in targets["ScalableTargets"] if prefix in t["ResourceId"])


def test_instance_type_change_of_an_autoscaled_variant_deploys(
    emulator: MotoServer, cdk: CdkCli, tmp_path: Path
) -> None:
    ensure_bootstrapped(emulator, cdk, tmp_path)
    first = _deploy(cdk, emulator, _config(tmp_path, "first", "ml.c5.large"), tmp_path / "first.out")
    before = deployed_endpoint(emulator, "TabularDay2")
    assert before["EndpointStatus"] == "InService"
    name = before["EndpointName"]
    assert _scalable_variants(emulator) == [
        f"endpoint/{name}/variant/compute-optimized",
        f"endpoint/{name}/variant/general-purpose",
    ]

    policies = _policies(emulator)
    assert len(policies) == 2

    second_config = _config(tmp_path, "second", "ml.c5.xlarge")
    second = _deploy(
        cdk, emulator, second_config, tmp_path / "second.out", expect_paused=("compute-optimized",)
    )
    after = deployed_endpoint(emulator, "TabularDay2")
    assert after["EndpointStatus"] == "InService"
    assert after["EndpointName"] == name  # callers and IAM policies naming the endpoint keep working
    assert _policies(emulator) == policies
    config = emulator.client("sagemaker").describe_endpoint_config(
        EndpointConfigName=after["EndpointConfigName"]
    )
    types = {v["VariantName"]: v["InstanceType"] for v in config["ProductionVariants"]}
    assert types == {"general-purpose": "ml.m5.large", "compute-optimized": "ml.c5.xlarge"}
    assert _scalable_variants(emulator) == [
        f"endpoint/{name}/variant/compute-optimized",
        f"endpoint/{name}/variant/general-purpose",
    ]

    retained = _retained(emulator)
    cdk.destroy(assembly=second)
    _delete_retained(emulator, retained)
    assert first.exists()
    endpoints = emulator.client("sagemaker").list_endpoints()["Endpoints"]
    assert not [e for e in endpoints if "TabularDay2" in e["EndpointName"]]
    assert _scalable_variants(emulator) == []
    alarms = emulator.client("cloudwatch").describe_alarms()["MetricAlarms"]
    assert not [a for a in alarms if a["AlarmName"].startswith("TabularDay2")]


def _shadow_config(tmp_path: Path, name: str, shadow_instance_type: str) -> Path:
    data: dict[str, Any] = absolute_paths(
        yaml.safe_load((REPO / "config" / "realtime-shadow.yaml").read_text()), REPO / "config"
    )
    data["name"] = "tabular-shadow-day2"
    scaling = {"min_capacity": 1, "max_capacity": 2, "target_invocations_per_instance": 200}
    data["endpoint"]["variants"][0]["autoscaling"] = scaling
    shadow = data["endpoint"]["shadow_variants"][0]
    shadow["autoscaling"] = scaling
    shadow["instance_type"] = shadow_instance_type
    source = tmp_path / name / "shadow-day2.yaml"
    source.parent.mkdir()
    source.write_text(yaml.safe_dump(data))
    return source


def test_instance_type_change_of_an_autoscaled_shadow_variant_deploys(
    emulator: MotoServer, cdk: CdkCli, tmp_path: Path
) -> None:
    ensure_bootstrapped(emulator, cdk, tmp_path)
    prefix = "TabularShadowDay2"
    _deploy(
        cdk, emulator, _shadow_config(tmp_path, "first", "ml.m5.large"), tmp_path / "first.out", prefix=prefix
    )
    before = deployed_endpoint(emulator, prefix)
    name = before["EndpointName"]
    assert _scalable_variants(emulator, prefix) == [
        f"endpoint/{name}/variant/production",
        f"endpoint/{name}/variant/shadow",
    ]

    second = _deploy(
        cdk,
        emulator,
        _shadow_config(tmp_path, "second", "ml.c5.large"),
        tmp_path / "second.out",
        prefix=prefix,
        expect_paused=("shadow",),
    )
    after = deployed_endpoint(emulator, prefix)
    assert after["EndpointStatus"] == "InService"
    assert after["EndpointName"] == name
    config = emulator.client("sagemaker").describe_endpoint_config(
        EndpointConfigName=after["EndpointConfigName"]
    )
    assert [v["InstanceType"] for v in config["ShadowProductionVariants"]] == ["ml.c5.large"]
    assert _scalable_variants(emulator, prefix) == [
        f"endpoint/{name}/variant/production",
        f"endpoint/{name}/variant/shadow",
    ]

    retained = _retained(emulator, prefix)
    cdk.destroy(assembly=second)
    _delete_retained(emulator, retained)
    assert _scalable_variants(emulator, prefix) == []


def _retained(emulator: MotoServer, prefix: str = "TabularDay2") -> list[tuple[str, str]]:
    """(type, physical id) of what the two stacks retain on delete (key, buckets, repository, log group)."""
    cloudformation = emulator.client("cloudformation")
    out = []
    for stack in (f"{prefix}DevEcr", f"{prefix}DevServing"):
        for r in cloudformation.list_stack_resources(StackName=stack)["StackResourceSummaries"]:
            if r["ResourceType"] in RETAINED:
                out.append((r["ResourceType"], r["PhysicalResourceId"]))
    return out


RETAINED = ("AWS::KMS::Key", "AWS::S3::Bucket", "AWS::ECR::Repository", "AWS::Logs::LogGroup")


def _delete_retained(emulator: MotoServer, retained: list[tuple[str, str]]) -> None:
    """Remove what this test's stacks retained, so the session's final destroy test sees only its own."""
    s3 = emulator.client("s3")
    for kind, physical in retained:
        if kind == "AWS::KMS::Key":
            emulator.client("kms").schedule_key_deletion(KeyId=physical, PendingWindowInDays=7)
        elif kind == "AWS::S3::Bucket":
            versions = s3.list_object_versions(Bucket=physical)
            for v in versions.get("Versions", []) + versions.get("DeleteMarkers", []):
                s3.delete_object(Bucket=physical, Key=v["Key"], VersionId=v["VersionId"])
            s3.delete_bucket(Bucket=physical)
        elif kind == "AWS::ECR::Repository":
            emulator.client("ecr").delete_repository(repositoryName=physical, force=True)
        else:
            logs = emulator.client("logs")
            # The endpoint's log group is destroyed with the stack; only a retained one is still there.
            if logs.describe_log_groups(logGroupNamePrefix=physical)["logGroups"]:
                logs.delete_log_group(logGroupName=physical)
