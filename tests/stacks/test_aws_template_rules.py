"""Template rows of AWS's rules, seen in the session's synthesized templates (docs/aws-rules.md): container
log groups, the execution role's log grants and trust policy, and the inference-component path's ordering."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk.assertions import Annotations, Match
from stack_support import CONFIG_DIR, ROOT, SynthesizedApp, cdk_context

from smkit.cdk import ServingStacks, add_deployment
from smkit.config.overrides import PREVIOUS_S3_CONTEXT

LOG_GROUP = "AWS::Logs::LogGroup"
COMPONENT = "AWS::SageMaker::InferenceComponent"


def _of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == kind}


def _log_statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        s
        for r in _of_type(template, "AWS::IAM::ManagedPolicy").values()
        for s in r["Properties"]["PolicyDocument"]["Statement"]
        if any(
            str(a).startswith("logs:")
            for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
        )
    ]


@pytest.mark.parametrize("case", ["inference-components", "llm"])
def test_component_log_groups_have_retention_and_key_and_the_role_writes_only_there(
    synthesized: SynthesizedApp, case: str
) -> None:
    template = synthesized.template_json(case)
    cfg = synthesized.configs[case]
    stack = synthesized.stacks[case].serving
    groups = _of_type(template, LOG_GROUP)
    by_name = {g["Properties"].get("LogGroupName"): logical for logical, g in groups.items()}
    spec = cfg.endpoint.inference_components
    assert spec is not None
    bases = [c.name for c in spec.components if c.base_component is None]
    expected = {f"/aws/sagemaker/InferenceComponents/{stack.components[n].component_name}" for n in bases}
    expected.add(f"/aws/sagemaker/Endpoints/{stack.endpoint.endpoint_name}")
    assert expected <= set(by_name)
    for name in expected:
        props = groups[by_name[name]]["Properties"]
        assert props["RetentionInDays"] == cfg.monitoring.log_retention_days
        assert "KmsKeyId" in props
    # Each base component is created after its group (SageMaker would otherwise create it, unencrypted).
    components = _of_type(template, COMPONENT)
    for n in bases:
        physical = stack.components[n].component_name
        [resource] = [r for r in components.values() if r["Properties"]["InferenceComponentName"] == physical]
        group = by_name[f"/aws/sagemaker/InferenceComponents/{physical}"]
        assert group in resource.get("DependsOn", [])
    # The role writes to exactly these groups: no wildcard over /aws/sagemaker/Endpoints/*.
    [statement] = _log_statements(template)
    resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
    assert sorted(r["Fn::GetAtt"][0] for r in resources) == sorted(by_name[n] for n in expected)
    assert "/aws/sagemaker/Endpoints/*" not in json.dumps(template)
    # The outputs name the components' groups.
    output = template["Outputs"]["ComponentLogGroupNames"]["Value"]
    text = json.dumps(output)
    for n in bases:
        assert (
            f"{n}=" in text
            and by_name[f"/aws/sagemaker/InferenceComponents/{stack.components[n].component_name}"] in text
        )


def test_endpoint_role_writes_only_its_endpoint_group(synthesized: SynthesizedApp) -> None:
    template = synthesized.template_json("realtime")
    stack = synthesized.stacks["realtime"].serving
    groups = _of_type(template, LOG_GROUP)
    [endpoint_group] = [
        k
        for k, g in groups.items()
        if g["Properties"].get("LogGroupName") == f"/aws/sagemaker/Endpoints/{stack.endpoint.endpoint_name}"
    ]
    [statement] = _log_statements(template)
    assert statement["Resource"] == {"Fn::GetAtt": [endpoint_group, "Arn"]}


def _statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        s
        for r in _of_type(template, "AWS::IAM::ManagedPolicy").values()
        for s in r["Properties"]["PolicyDocument"]["Statement"]
    ]


def _readable(template: dict[str, Any]) -> set[str]:
    """Object ARNs (literal ones) the role may s3:GetObject."""
    out = set()
    for s in _statements(template):
        actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
        resources = s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]]
        if "s3:GetObject" in actions:
            out |= {r for r in resources if isinstance(r, str)}
    return out


def test_new_s3_prefix_keeps_the_recorded_releases_readable(tmp_path: Path) -> None:
    """Weights and adapter moved to new prefixes: the role reads the new ones and, from the releases passed as
    context (what smkit deploy passes), the old ones; cdk-nag still passes (the synth would fail)."""
    data = yaml.safe_load((CONFIG_DIR / "llm.yaml").read_text())
    data["model"]["containers"][0]["model_data"]["uri"] = "s3://my-llm-weights/qwen2.5-0.5b-instruct-v2/"
    data["endpoint"]["inference_components"]["components"][1]["artifact_url"] = (
        "s3://my-llm-weights/adapters/support-v2.tar.gz"
    )
    config = tmp_path / "llm.yaml"
    config.write_text(yaml.safe_dump(data))
    previous = [
        "s3://my-llm-weights/qwen2.5-0.5b-instruct/",
        "s3://my-llm-weights/adapters/support.tar.gz",
        "s3://my-llm-weights/qwen2.5-0.5b-instruct-v2/",  # the current one: granted once
    ]
    context = {**cdk_context(), "config": str(config), PREVIOUS_S3_CONTEXT: json.dumps(previous)}
    app = cdk.App(context=context, outdir=str(tmp_path / "cdk.out"))
    added = add_deployment(app, project_root=ROOT)
    assert isinstance(added, ServingStacks)
    template = app.synth().get_stack_by_name(added.serving.stack_name).template
    readable = _readable(template)
    for prefix in ("qwen2.5-0.5b-instruct", "qwen2.5-0.5b-instruct-v2"):
        assert f"arn:aws:s3:::my-llm-weights/{prefix}/*" in readable, readable
    for archive in ("adapters/support.tar.gz", "adapters/support-v2.tar.gz"):
        assert f"arn:aws:s3:::my-llm-weights/{archive}" in readable, readable


def test_previous_s3_context_that_is_not_a_list_is_refused(tmp_path: Path) -> None:
    context = {**cdk_context(), "config": str(CONFIG_DIR / "llm.yaml"), PREVIOUS_S3_CONTEXT: "s3://b/k"}
    app = cdk.App(context=context, outdir=str(tmp_path))
    with pytest.raises(
        SystemExit, match="context previous_s3_uris: 's3://b/k' is not a JSON list of S3 URIs"
    ):
        add_deployment(app, project_root=ROOT)


@pytest.mark.parametrize("case", ["realtime", "inference-components"])
def test_trust_policy_limits_sagemaker_to_this_account_and_region(
    synthesized: SynthesizedApp, case: str
) -> None:
    template = synthesized.template_json(case)
    [role] = [
        r
        for r in _of_type(template, "AWS::IAM::Role").values()
        if "sagemaker" in json.dumps(r["Properties"]["AssumeRolePolicyDocument"])
    ]
    [statement] = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    condition = statement["Condition"]
    assert condition["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    source_arn = json.dumps(condition["ArnLike"]["aws:SourceArn"])
    assert ":sagemaker:" in source_arn and "AWS::Region" in source_arn and "AWS::AccountId" in source_arn


@pytest.mark.parametrize("case", ["inference-components", "llm"])
def test_component_models_wait_for_every_access_policy_of_the_role(
    synthesized: SynthesizedApp, case: str
) -> None:
    template = synthesized.template_json(case)
    role = synthesized.stacks[case].serving.execution_role
    stack = synthesized.stacks[case].serving
    access = {stack.resolve(p.node.default_child.logical_id) for p in role.access_policies}  # type: ignore[union-attr]
    assert len(access) >= 2  # the main policy and the metrics policy (plus the registry login for ECR images)
    for model in _of_type(template, "AWS::SageMaker::Model").values():
        assert access <= set(model.get("DependsOn", [])), model.get("DependsOn")


def test_alarms_without_a_subscriber_are_a_synth_warning(synthesized: SynthesizedApp) -> None:
    Annotations.from_stack(synthesized.stacks["inference-components"].serving).has_warning(
        "*", Match.string_like_regexp("nobody subscribes to.*AlarmTopicArn")
    )
    Annotations.from_stack(synthesized.stacks["async"].serving).has_warning(
        "*", Match.string_like_regexp("monitoring.subscriptions")
    )
    Annotations.from_stack(synthesized.stacks["realtime"].serving).has_no_warning(
        "*", Match.string_like_regexp("nobody subscribes to")
    )
