"""Findings of a review of the synthesized templates against AWS's documentation: grants only for what the
stacks name, the model-copy handler kept to the models/ prefix, and the production single-instance warning."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import yaml
from aws_cdk.assertions import Annotations, Match
from stack_support import CONFIG_DIR, SynthesizedApp, cdk_context

from smkit.cdk.serving_stage import add_serving_stacks
from smkit.config import parse_config
from smkit.config.resolved import resolve


def _of_type(template: dict[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == type_}


def _statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        s
        for type_ in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy")
        for r in _of_type(template, type_).values()
        for s in r["Properties"]["PolicyDocument"]["Statement"]
    ]


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return action if isinstance(action, list) else [action]


def _named_alarms(template: dict[str, Any]) -> set[str]:
    """The alarms a component's or the endpoint's AutoRollbackConfiguration names (their logical ids)."""
    out = set()
    for type_ in ("AWS::SageMaker::InferenceComponent", "AWS::SageMaker::Endpoint"):
        for r in _of_type(template, type_).values():
            rollback = r["Properties"].get("DeploymentConfig", {}).get("AutoRollbackConfiguration", {})
            out |= {a["AlarmName"]["Ref"] for a in rollback.get("Alarms", [])}
    return out


def test_describe_alarms_only_for_the_alarms_a_rolling_update_names(synthesized: SynthesizedApp) -> None:
    # inference-components.yaml: alarms, but no component rolls (they scale to zero): nothing to read.
    template = synthesized.template_json("inference-components")
    assert _named_alarms(template) == set()
    assert not [s for s in _statements(template) if "cloudwatch:DescribeAlarms" in _actions(s)]
    # capacity.yaml rolls its component: the grant names exactly the alarms the component names.
    template = synthesized.template_json("capacity")
    named = _named_alarms(template)
    assert len(named) == 2
    [describe] = [s for s in _statements(template) if "cloudwatch:DescribeAlarms" in _actions(s)]
    granted = {r["Fn::GetAtt"][0] for r in describe["Resource"]}
    assert granted == named


def test_the_model_copy_handler_writes_and_deletes_only_under_models(synthesized: SynthesizedApp) -> None:
    """CDK's BucketDeployment grants read, write and delete on every object of the endpoint bucket; the
    stacks narrow the endpoint bucket's objects to models/* (captured data and async results out of reach)."""
    template = synthesized.template_json("realtime")
    [bucket] = [
        k
        for k, r in _of_type(template, "AWS::S3::Bucket").items()
        if "aws:kms" in json.dumps(r["Properties"].get("BucketEncryption", {}))
    ]
    handler_policies = [
        r
        for k, r in _of_type(template, "AWS::IAM::Policy").items()
        if k.startswith("CustomCDKBucketDeployment")
    ]
    assert handler_policies
    for policy in handler_policies:
        for s in policy["Properties"]["PolicyDocument"]["Statement"]:
            if "s3:DeleteObject*" not in _actions(s):
                continue
            objects = [r for r in s["Resource"] if "Fn::Join" in r]
            assert objects == [{"Fn::Join": ["", [{"Fn::GetAtt": [bucket, "Arn"]}, "/models/*"]]}], s


def _synth(data: dict[str, Any], outdir: Path) -> cdk.Stack:
    app = cdk.App(context=cdk_context(), outdir=str(outdir))
    cfg = parse_config(copy.deepcopy(data), source="test", base_dir=CONFIG_DIR)
    stack = add_serving_stacks(app, deployment=resolve(cfg, Path.cwd())).serving
    app.synth()
    return stack


def test_production_variants_of_one_instance_are_a_synth_warning(tmp_path: Path) -> None:
    """AWS Config's managed rule sagemaker-endpoint-config-prod-instance-count reports them NON_COMPLIANT."""
    data = yaml.safe_load((CONFIG_DIR / "multi-container.yaml").read_text())
    assert data["endpoint"]["variants"][0]["initial_instance_count"] == 1
    data["environment"] = "prod"
    Annotations.from_stack(_synth(data, tmp_path / "one")).has_warning(
        "*",
        Match.string_like_regexp(
            "environment: prod, but variant.s. main start with one instance.*"
            "sagemaker-endpoint-config-prod-instance-count.*initial_instance_count: 2 or more"
        ),
    )
    data["endpoint"]["variants"][0]["initial_instance_count"] = 2
    Annotations.from_stack(_synth(data, tmp_path / "two")).has_no_warning(
        "*", Match.string_like_regexp("environment: prod, but")
    )
