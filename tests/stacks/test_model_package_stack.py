"""``model_data.source: model-package``: the Model names the registry version; the role reads its data's
prefix and pulls the package's image; no copy, no Image or ModelDataUrl of smkit's."""

from __future__ import annotations

from typing import Any

from stack_support import DLC_URI, PACKAGE, PACKAGE_DATA, S3_SOURCE_KEY, SynthesizedApp, cfn_lint_findings

PARTITION = {"Ref": "AWS::Partition"}


def _resources(template: dict[str, Any], type_: str) -> list[dict[str, Any]]:
    return [r for r in template["Resources"].values() if r["Type"] == type_]


def _statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for policy in _resources(template, "AWS::IAM::ManagedPolicy") + _resources(template, "AWS::IAM::Policy"):
        if "ExecutionRole" in str(policy["Properties"].get("Roles")):
            out += policy["Properties"]["PolicyDocument"]["Statement"]
    return out


def test_the_model_names_the_package_version_and_no_image_or_data_of_its_own(
    synthesized: SynthesizedApp,
) -> None:
    template = synthesized.template_json("realtime-package")
    [model] = _resources(template, "AWS::SageMaker::Model")
    container = model["Properties"]["PrimaryContainer"]
    # GROUP/VERSION is a version of the stack's own account and region.
    assert container["ModelPackageName"] == {
        "Fn::Join": [
            "",
            [
                "arn:",
                PARTITION,
                ":sagemaker:",
                {"Ref": "AWS::Region"},
                ":",
                {"Ref": "AWS::AccountId"},
                f":model-package/{PACKAGE}",
            ],
        ]
    }
    assert not {"Image", "ModelDataUrl", "ModelDataSource"} & set(container)
    assert _resources(template, "Custom::CDKBucketDeployment") == []


def test_the_role_reads_the_packages_data_prefix_and_pulls_its_image(synthesized: SynthesizedApp) -> None:
    template = synthesized.template_json("realtime-package")
    statements = _statements(template)
    bucket, prefix = PACKAGE_DATA.removeprefix("s3://").split("/", 1)
    reads = [s for s in statements if s.get("Sid") == "ReadModelDataTabular"]
    assert reads and reads[0]["Action"] == "s3:GetObject"
    assert reads[0]["Resource"] == {"Fn::Join": ["", ["arn:", PARTITION, f":s3:::{bucket}/{prefix}*"]]}
    lists = [s for s in statements if s.get("Sid") == "ListModelDataTabular"]
    assert lists and lists[0]["Condition"] == {"StringLike": {"s3:prefix": [f"{prefix}*"]}}
    decrypt = [s for s in statements if s.get("Sid") == "DecryptModelDataTabular"]
    assert decrypt and decrypt[0]["Resource"] == S3_SOURCE_KEY
    repository = DLC_URI.split("/", 1)[1].split(":")[0]
    pulls = [s for s in statements if "ecr:BatchGetImage" in str(s["Action"])]
    assert any(repository in str(s["Resource"]) for s in pulls), pulls


def test_the_package_template_is_clean_under_cfn_lint(synthesized: SynthesizedApp) -> None:
    stack = synthesized.stacks["realtime-package"].serving
    assert cfn_lint_findings([synthesized.outdir / stack.template_file]) == []
