"""The gates themselves: cdk-nag packs and aws-cdk's default template rules fail synthesis.

A deliberately non-compliant app proves the packs registered by :func:`smkit.cdk.compliance.add_compliance_checks`
run and that ``@aws-cdk/core:validateAgainstDefaultRules`` from cdk.json turns CloudFormation findings into
errors; an acknowledgement silences exactly the finding it names.
"""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_sns as sns
from stack_support import SynthesizedApp, cdk_context

from smkit.cdk.compliance import add_compliance_checks
from smkit.cdk.constructs.acknowledge import acknowledge


def test_cdk_json_turns_default_rule_findings_into_errors() -> None:
    assert cdk_context()["@aws-cdk/core:validateAgainstDefaultRules"] is True


def test_non_compliant_app_fails_synth_with_every_pack(tmp_path: Path) -> None:
    app = cdk.App(context=cdk_context(), outdir=str(tmp_path))
    stack = cdk.Stack(app, "Bad")
    sagemaker.CfnEndpointConfig(
        stack,
        "Unencrypted",
        production_variants=[
            sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                variant_name="main", model_name="m", instance_type="ml.m5.large", initial_instance_count=1
            )
        ],
    )
    sagemaker.CfnModel(
        stack,
        "BadVpc",
        execution_role_arn="arn:aws:iam::123456789012:role/x",
        vpc_config=sagemaker.CfnModel.VpcConfigProperty(
            subnets=["not-a-subnet"], security_group_ids=["sg-1"]
        ),
    )
    quiet = sns.Topic(stack, "Acknowledged")
    acknowledge(quiet, {"AwsSolutions-SNS2": "test: acknowledged findings must not be reported"})
    add_compliance_checks(app)
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    rules: dict[str, set[str]] = {}
    for plugin in report["pluginReports"]:
        for violation in plugin["violations"]:
            paths = {c["constructPath"] for c in violation["violatingConstructs"]}
            rules.setdefault(plugin["pluginName"], set()).update(
                f"{violation['ruleName']}@{p}" for p in paths
            )
    assert {"AwsSolutions", "HIPAA.Security", "NIST.800.53.R5", "CloudFormation Validate"} <= set(rules)
    assert (
        "HIPAA.Security-SageMakerEndpointConfigurationKMSKeyConfigured@Bad/Unencrypted"
        in rules["HIPAA.Security"]
    )
    assert (
        "NIST.800.53.R5-SageMakerEndpointConfigurationKMSKeyConfigured@Bad/Unencrypted"
        in rules["NIST.800.53.R5"]
    )
    assert any(r.endswith("@Bad/BadVpc") for r in rules["CloudFormation Validate"])
    assert not any(r.startswith("AwsSolutions-SNS2@Bad/Acknowledged") for r in rules["AwsSolutions"])
    assert any(r.startswith("AwsSolutions-SNS3@Bad/Acknowledged") for r in rules["AwsSolutions"])


def test_session_app_has_no_finding_or_warning_of_any_plugin(synthesized: SynthesizedApp) -> None:
    """Every config passed the packs and default rules, and aws-cdk raised no warning annotation either."""
    report = json.loads((synthesized.outdir / "validation-report.json").read_text())
    findings = [
        f"{p['pluginName']}: {v['ruleName']} ({v.get('severity')})"
        for p in report["pluginReports"]
        for v in p["violations"]
    ]
    assert findings == []
