"""The ECR stack's supply-chain options: enhanced (continuous) scanning and ECR managed signing.

A real synth of the stack with both options on, under the cdk-nag packs (AwsSolutions, HIPAA Security,
NIST 800-53 R5: any finding fails the synth), then cfn-lint with no rule ignored, whose bundled registry
schemas know ``AWS::ECR::RegistryScanningConfiguration`` and ``AWS::ECR::SigningConfiguration``.
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template
from cfnlint.api import ManualArgs, lint_file
from stack_support import cdk_context, validation_findings

from smkit.cdk.compliance import add_compliance_checks
from smkit.cdk.ecr_stack import EcrStack


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, EcrStack]]:
    outdir = tmp_path_factory.mktemp("ecr-supply-chain")
    app = cdk.App(context=cdk_context(), outdir=str(outdir))
    env = cdk.Environment(account="123456789012", region="us-east-1")
    stacks = {
        "default": EcrStack(app, "DefaultEcr", env=env),
        "hardened": EcrStack(app, "HardenedEcr", env=env, enhanced_scanning=True, signing=True),
    }
    add_compliance_checks(app)
    try:
        app.synth()
    except RuntimeError as exc:
        pytest.fail(f"synth failed validation:\n{chr(10).join(validation_findings(outdir)) or exc}")
    return outdir, stacks


def _template(synthesized: tuple[Path, dict[str, EcrStack]], name: str) -> Template:
    return Template.from_stack(synthesized[1][name])


def test_by_default_only_basic_scan_on_push(synthesized: tuple[Path, dict[str, EcrStack]]) -> None:
    t = _template(synthesized, "default")
    t.has_resource_properties("AWS::ECR::Repository", {"ImageScanningConfiguration": {"ScanOnPush": True}})
    t.resource_count_is("AWS::ECR::RegistryScanningConfiguration", 0)
    t.resource_count_is("AWS::ECR::SigningConfiguration", 0)


def test_enhanced_scanning_is_continuous_and_filtered_to_the_repository(
    synthesized: tuple[Path, dict[str, EcrStack]],
) -> None:
    t = _template(synthesized, "hardened")
    repository = {"Ref": Match.string_like_regexp("ServingRepository")}
    t.has_resource_properties(
        "AWS::ECR::RegistryScanningConfiguration",
        {
            "ScanType": "ENHANCED",
            "Rules": [
                {
                    "ScanFrequency": "CONTINUOUS_SCAN",
                    "RepositoryFilters": [{"Filter": repository, "FilterType": "WILDCARD"}],
                }
            ],
        },
    )
    t.has_resource_properties("AWS::Signer::SigningProfile", {"PlatformId": "Notation-OCI-SHA384-ECDSA"})
    t.has_resource_properties(
        "AWS::ECR::SigningConfiguration",
        {
            "Rules": [
                {
                    "SigningProfileArn": {"Fn::GetAtt": [Match.string_like_regexp("SigningProfile"), "Arn"]},
                    "RepositoryFilters": [{"Filter": repository, "FilterType": "WILDCARD_MATCH"}],
                }
            ]
        },
    )
    t.has_output("SigningProfileArn", {})


def test_cfn_lint_is_clean_on_both_templates(synthesized: tuple[Path, dict[str, EcrStack]]) -> None:
    files = sorted(synthesized[0].glob("*Ecr.template.json"))
    assert len(files) == 2
    config = ManualArgs(regions=["us-east-1"])
    findings = [
        f"{path.name}:{m.linenumber}: {m.rule.id} {m.message}"
        for path in files
        for m in lint_file(path, config=config)
    ]
    assert findings == [], "\n".join(findings)
