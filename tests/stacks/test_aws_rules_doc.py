"""docs/aws-rules.md is what smkit/config/rule_doc.py renders for the session's templates of config/*.yaml."""

from __future__ import annotations

from stack_support import CONFIG_FILES, ROOT, SynthesizedApp

from smkit.config.rule_doc import NONE_FOUND, emitted, property_paths, render, rows_for, schema_limits
from smkit.config.rule_table import ROWS


def test_committed_aws_rules_doc_is_current(synthesized: SynthesizedApp) -> None:
    templates = [synthesized.template_json(path.stem) for path in CONFIG_FILES]
    expected = render(emitted(templates))
    committed = (ROOT / "docs" / "aws-rules.md").read_text(encoding="utf-8")
    assert committed == expected, "docs/aws-rules.md is out of date: python -m smkit.cdk.rules_doc"


def test_every_row_names_its_page_check_and_test() -> None:
    assert len({r.id for r in ROWS}) == len(ROWS)
    for r in ROWS:
        assert r.url.startswith("https://") and r.check and r.test and r.applies, r.id


def test_property_paths_and_row_matching() -> None:
    properties = {
        "ProductionVariants": [
            {"VariantName": "a", "VolumeSizeInGB": 10, "ModelName": {"Fn::GetAtt": ["M", "N"]}}
        ],
        "KmsKeyId": {"Ref": "Key"},
        "PrimaryContainer": {"Environment": {"A": "1", "B": "2"}},
    }
    assert property_paths(properties) == {
        "ProductionVariants[].VariantName",
        "ProductionVariants[].VolumeSizeInGB",
        "ProductionVariants[].ModelName",
        "KmsKeyId",
        "PrimaryContainer.Environment",
    }
    ec = "AWS::SageMaker::EndpointConfig"
    assert [r.id for r in rows_for(ec, "ProductionVariants[].VolumeSizeInGB")] == ["instance-store-volume"]
    assert rows_for(ec, "ProductionVariants[].VariantName") == []
    assert NONE_FOUND in render({ec: {"ProductionVariants[].VariantName"}}, limits_of=lambda *_: "")


def test_schema_limits_come_from_the_cloudformation_schema() -> None:
    """The limits column is the registry schema cfn-lint ships, resolved through $ref and list items."""
    ic, ep = "AWS::SageMaker::InferenceComponent", "AWS::SageMaker::Endpoint"
    assert schema_limits(ic, "Specification.SchedulingConfig.AvailabilityZoneBalance.MaxImbalance") == "0-100"
    timeout = "DeploymentConfig.BlueGreenUpdatePolicy.MaximumExecutionTimeoutInSeconds"
    assert schema_limits(ep, timeout) == "600-28800"
    types = schema_limits("AWS::SageMaker::EndpointConfig", "ProductionVariants[].InstanceType")
    assert types.startswith("one of ml.") and "(+" in types  # the enum, the first 8 shown
    assert schema_limits(ic, "No.Such.Property") == ""
    doc = render({ic: {"Specification.SchedulingConfig.AvailabilityZoneBalance.MaxImbalance"}})
    assert "| 0-100 | az-balance |" in doc
