"""The ECR stack's supply-chain options: enhanced (continuous) scanning and ECR managed signing.

A real synth of the stack with both options on, directly and from a config's ``security.repository``
section, under the cdk-nag packs (AwsSolutions, HIPAA Security, NIST 800-53 R5: any finding fails the
synth), then cfn-lint with no rule ignored, whose bundled registry schemas know
``AWS::ECR::RegistryScanningConfiguration`` and ``AWS::ECR::SigningConfiguration``.
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk.assertions import Match, Template
from stack_support import (
    CONFIG_DIR,
    DLC_URI,
    ROOT,
    S3_ARCHIVE,
    cdk_context,
    cfn_lint_findings,
    validation_findings,
)

from smkit.cdk.compliance import add_compliance_checks
from smkit.cdk.ecr_stack import EcrStack
from smkit.cdk.serving_stage import add_serving_stacks
from smkit.config import ConfigError, DeploymentConfig, parse_config
from smkit.config.resolved import resolve


def _hardened_config(**image: str) -> DeploymentConfig:
    """config/realtime.yaml with both repository options on (model data in S3: no local archive needed)."""
    data = yaml.safe_load((CONFIG_DIR / "realtime.yaml").read_text())
    data["name"] = "tabular-hardened"
    data["image"] = image or {"source": "ecr", "tag": "v1.2.3"}
    data["model"]["containers"][0]["model_data"] = {"source": "s3", "uri": S3_ARCHIVE}
    data["security"]["repository"] = {"enhanced_scanning": True, "signing": True}
    return parse_config(data, source="hardened.yaml", base_dir=CONFIG_DIR)


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, EcrStack]]:
    outdir = tmp_path_factory.mktemp("ecr-supply-chain")
    app = cdk.App(context=cdk_context(), outdir=str(outdir))
    env = cdk.Environment(account="123456789012", region="us-east-1")
    stacks = {
        "default": EcrStack(app, "DefaultEcr", env=env),
        "hardened": EcrStack(app, "HardenedEcr", env=env, enhanced_scanning=True, signing=True),
    }
    configured = add_serving_stacks(app, deployment=resolve(_hardened_config(), ROOT)).ecr
    assert configured is not None
    stacks["configured"] = configured
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


@pytest.mark.parametrize("name", ["hardened", "configured"])
def test_enhanced_scanning_is_continuous_and_filtered_to_the_repository(
    synthesized: tuple[Path, dict[str, EcrStack]], name: str
) -> None:
    t = _template(synthesized, name)
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


def test_cfn_lint_is_clean_on_every_template(synthesized: tuple[Path, dict[str, EcrStack]]) -> None:
    files = sorted(synthesized[0].glob("*Ecr.template.json"))
    assert len(files) == 3
    findings = cfn_lint_findings(files)
    assert findings == [], "\n".join(findings)


def test_repository_options_without_a_repository_are_a_config_error() -> None:
    with pytest.raises(ConfigError) as raised:
        _hardened_config(source="dlc", uri=DLC_URI)
    message = str(raised.value)
    for field in ("enhanced_scanning", "signing"):
        assert f"security.repository.{field}: True: every image is a dlc URI" in message
