"""Security properties every synthesized template must have."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Match
from stack_support import SynthesizedApp

from smkit.aws.instances import has_instance_storage

STATEFUL_NAME_PROPERTIES = {
    "AWS::SageMaker::Model": "ModelName",
    "AWS::SageMaker::EndpointConfig": "EndpointConfigName",
    "AWS::S3::Bucket": "BucketName",
    "AWS::ECR::Repository": "RepositoryName",
    "AWS::IAM::Role": "RoleName",
    "AWS::KMS::Key": "KeyName",
}


def _resources(synthesized: SynthesizedApp, type_: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for case in synthesized.configs:
        for logical, res in synthesized.template_json(case)["Resources"].items():
            if res["Type"] == type_:
                out.append((f"{case}:{logical}", res))
    return out


def _statements(document: dict[str, Any]) -> list[dict[str, Any]]:
    statements = document["Statement"]
    return statements if isinstance(statements, list) else [statements]


def _listify(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


# Actions without resource-level permissions: each alone in a managed policy of its own, where its
# cdk-nag acknowledgement of "*" covers exactly that statement.
ALLOWED_STAR = {"ecr:GetAuthorizationToken", "cloudwatch:PutMetricData"}
# EC2 Describe* calls have no resource-level permissions; only a VPC-attached model gets them.
VPC_DESCRIBE = {
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeVpcs",
    "ec2:DescribeDhcpOptions",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
}


def test_execution_role_has_no_wildcard_resource_beyond_the_allowed_one(synthesized: SynthesizedApp) -> None:
    policies = _resources(synthesized, "AWS::IAM::ManagedPolicy")
    assert len(policies) >= 3 * len(synthesized.configs)  # main, registry login, metrics (+ rollback, VPC)
    for where, policy in policies:
        allowed = ALLOWED_STAR | (VPC_DESCRIBE if where.startswith("realtime-byo:") else set())
        statements = _statements(policy["Properties"]["PolicyDocument"])
        for statement in statements:
            if "*" in _listify(statement["Resource"]):
                assert set(_listify(statement["Action"])) <= allowed, f"{where}: {statement}"
                assert len(statements) == 1, f"{where}: a '*' statement shares its policy"
            assert not any(a.endswith("*") or a == "*" for a in _listify(statement["Action"])), where


def test_execution_role_has_no_managed_policies(synthesized: SynthesizedApp) -> None:
    for where, role in _resources(synthesized, "AWS::IAM::Role"):
        principal = role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"]
        if principal.get("Service") != "sagemaker.amazonaws.com":
            continue
        assert "ManagedPolicyArns" not in role["Properties"], where
        assert "Policies" not in role["Properties"], where


def test_every_endpoint_config_is_kms_encrypted(synthesized: SynthesizedApp) -> None:
    configs = _resources(synthesized, "AWS::SageMaker::EndpointConfig")
    assert len(configs) == len(synthesized.configs)
    for where, config in configs:
        types = [v.get("InstanceType", "") for v in config["Properties"]["ProductionVariants"]]
        if any(has_instance_storage(t) for t in types):
            # NVMe instance storage (llm.yaml's ml.g5) is hardware-encrypted; SageMaker refuses a KmsKeyId.
            assert "KmsKeyId" not in config["Properties"], where
            continue
        assert config["Properties"].get("KmsKeyId"), where


@pytest.mark.parametrize("type_,name_property", sorted(STATEFUL_NAME_PROPERTIES.items()))
def test_names_are_generated(synthesized: SynthesizedApp, type_: str, name_property: str) -> None:
    for where, res in _resources(synthesized, type_):
        assert name_property not in res["Properties"], f"{where} has a fixed {name_property}"


def test_ecr_repository_is_scanned_immutable_encrypted_and_retained(synthesized: SynthesizedApp) -> None:
    t = synthesized.template("realtime", "ecr")
    t.has_resource(
        "AWS::ECR::Repository",
        {
            "Properties": {
                "ImageScanningConfiguration": {"ScanOnPush": True},
                "ImageTagMutability": "IMMUTABLE",
                "EncryptionConfiguration": {"EncryptionType": "KMS"},
                "LifecyclePolicy": {"LifecyclePolicyText": Match.any_value()},
            },
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
        },
    )


def test_buckets_are_private_tls_only_and_encrypted(synthesized: SynthesizedApp) -> None:
    for where, bucket in _resources(synthesized, "AWS::S3::Bucket"):
        props = bucket["Properties"]
        assert props["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }, where
        assert props["BucketEncryption"], where
        assert bucket["DeletionPolicy"] == "Retain", where
    for where, policy in _resources(synthesized, "AWS::S3::BucketPolicy"):
        statements = _statements(policy["Properties"]["PolicyDocument"])
        assert any(
            s.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport") == "false" for s in statements
        ), where


def test_invoke_grant_is_scoped_to_the_endpoint(synthesized: SynthesizedApp) -> None:
    endpoint = synthesized.stacks["realtime"].serving.endpoint
    stack = cdk.Stack(cdk.App(), "Client")
    role = iam.Role(stack, "Caller", assumed_by=iam.AccountRootPrincipal())
    grant = endpoint.grant_invoke(role)
    assert grant.success
    rendered = stack.resolve(grant.principal_statements[0].to_statement_json())
    assert sorted(rendered["Action"]) == ["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointAsync"]
    assert endpoint.endpoint_name.lower() in str(rendered["Resource"])
