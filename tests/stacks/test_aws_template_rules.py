"""Template rows of AWS's rules, seen in the session's synthesized templates (docs/aws-rules.md): container
log groups, the execution role's log grants and trust policy, and the inference-component path's ordering."""

from __future__ import annotations

import json
from typing import Any

import pytest
from stack_support import SynthesizedApp

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
