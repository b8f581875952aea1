"""The constructs in aws-cdk-lib's shape: the execution role is an ``iam.IGrantable`` whose grants land in its
managed policy, resources grant access and return ``iam.Grant``, and rollback alarms are chosen by what they
measure, for variants and inference components alike (real synth of small stacks)."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Template

from smkit.cdk import (
    FEATURE_FLAGS,
    AlarmThresholds,
    ComponentCompute,
    DeploymentGuardrails,
    EndpointBucket,
    EndpointConfiguration,
    EndpointMonitoring,
    ExecutionRole,
    InferenceComponent,
    InferenceEndpoint,
    InferenceModel,
    Measure,
)

THRESHOLDS = AlarmThresholds(
    latency_p99=cdk.Duration.millis(500), error_5xx_percent=1.0, error_4xx_percent=10.0
)


def _stack() -> cdk.Stack:
    return cdk.Stack(
        cdk.App(context=FEATURE_FLAGS),
        "Shape",
        env=cdk.Environment(account="111122223333", region="eu-west-1"),
    )


def _policies_of_role(template: Template) -> dict[str, str]:
    """Policy documents (as JSON text) by logical id, managed and inline."""
    found = {
        **template.find_resources("AWS::IAM::ManagedPolicy"),
        **template.find_resources("AWS::IAM::Policy"),
    }
    return {k: json.dumps(v["Properties"]["PolicyDocument"]) for k, v in found.items()}


def test_a_cdk_resource_grants_to_the_execution_role_into_its_managed_policy() -> None:
    stack = _stack()
    role = ExecutionRole(stack, "ExecutionRole")
    topic = sns.Topic(stack, "Topic")
    grant = topic.grant_publish(role)
    assert isinstance(grant, iam.Grant) and grant.success
    policies = _policies_of_role(Template.from_stack(stack))
    holding = [k for k, doc in policies.items() if "sns:Publish" in doc]
    assert len(holding) == 1 and holding[0].startswith("ExecutionRolePolicy"), policies
    assert not Template.from_stack(stack).find_resources("AWS::IAM::Policy")  # no inline DefaultPolicy


def test_the_execution_role_delegates_what_an_irole_offers() -> None:
    stack = _stack()
    role = ExecutionRole(stack, "ExecutionRole")
    sns.Topic(stack, "Topic").grant_publish(role)  # a managed policy must hold a statement
    caller = iam.Role(stack, "Caller", assumed_by=iam.AccountRootPrincipal())
    grant = role.grant_pass_role(caller)
    assert isinstance(grant, iam.Grant) and grant.success
    assert role.role_arn == role.role.role_arn and role.role_name == role.role.role_name
    documents = _policies_of_role(Template.from_stack(stack))
    assert any("iam:PassRole" in doc for doc in documents.values())


def test_the_endpoint_bucket_grants_and_returns_the_grant() -> None:
    stack = _stack()
    role = ExecutionRole(stack, "ExecutionRole")
    storage = EndpointBucket(stack, "Storage", encryption_key=kms.Key(stack, "Key"))
    write = storage.grant_write(role, ["capture", "async-output"])
    read = storage.grant_read(role, "async-input")
    assert write.success and read.success
    assert write.principal_statement is not None and read.principal_statement is not None
    assert write.principal_statement.actions == ["s3:PutObject"]
    assert read.principal_statement.actions == ["s3:GetObject"]


def test_rollback_alarms_are_the_ones_measuring_5xx_and_latency() -> None:
    stack = _stack()
    key = kms.Key(stack, "Key")
    config = EndpointConfiguration.from_endpoint_config_name(
        stack, "Config", "config", variant_names=["blue"]
    )
    endpoint = InferenceEndpoint(stack, "Endpoint", endpoint_config=config, deployment=DeploymentGuardrails())
    variants = EndpointMonitoring(
        stack,
        "Variants",
        endpoint=endpoint,
        thresholds=THRESHOLDS,
        encryption_key=key,
    )
    assert [a.node.id for a in variants.rollback_alarms] == ["blueNewFleet5xxRate", "blueNewFleetLatencyP99"]
    assert [a.node.id for a in variants.alarms] == ["blue5xxRate", "blue4xxRate", "blueLatencyP99"]
    component = InferenceComponent(
        stack,
        "Component",
        endpoint=endpoint,
        variant_name="pool",
        model=InferenceModel.from_model_name(stack, "Model", "m"),
        compute=ComponentCompute(cdk.Size.mebibytes(1024)),
    )
    components = EndpointMonitoring(
        stack,
        "Components",
        endpoint=endpoint,
        components={"tabular": component},
        thresholds=THRESHOLDS,
        encryption_key=key,
    )
    assert [a.node.id for a in components.rollback_alarms_of("tabular")] == [
        "tabular5xxRate",
        "tabularLatencyP99",
    ]
    assert len(components.alarms_of("tabular")) == 3
    assert {m for m in Measure if m.rolls_back} == {Measure.ERROR_5XX_RATE, Measure.LATENCY_P99}


def test_monitoring_an_endpoint_whose_variants_are_not_known_is_refused() -> None:
    stack = _stack()
    config = EndpointConfiguration.from_endpoint_config_name(stack, "Config", "config")
    endpoint = InferenceEndpoint(stack, "Endpoint", endpoint_config=config)
    with pytest.raises(
        ValueError, match=r"^Shape/Monitoring: the endpoint's config names no variants: import it"
    ):
        EndpointMonitoring(
            stack,
            "Monitoring",
            endpoint=endpoint,
            thresholds=THRESHOLDS,
            encryption_key=kms.Key(stack, "Key"),
        )
