"""cfn-lint over every synthesized template, no rule ignored: 0 errors and 0 warnings (informational style
hints such as I1022 "prefer Fn::Sub", which CDK's output trips everywhere, are not gated)."""

from __future__ import annotations

import json
from pathlib import Path

from stack_support import SynthesizedApp, cfn_lint_findings

# Every rule this gate ignores, with the reason. Keep it empty unless a finding is wrong for a good reason.
IGNORED_RULES: dict[str, str] = {}


def test_cfn_lint_is_clean_on_every_template(synthesized: SynthesizedApp) -> None:
    files = synthesized.template_files()
    stacks = sum(1 + (s.ecr is not None) for s in synthesized.stacks.values())
    assert len(files) == stacks
    findings = cfn_lint_findings(files, ignore=list(IGNORED_RULES))
    assert findings == [], "\n".join(findings)


def test_one_run_reports_the_finding_of_any_template(synthesized: SynthesizedApp, tmp_path: Path) -> None:
    first, second = synthesized.template_files()[:2]
    broken = json.loads(second.read_text())
    broken["Resources"]["Broken"] = {"Type": "AWS::S3::Bucket", "Properties": {"NoSuchProperty": 1}}
    (tmp_path / "Broken.template.json").write_text(json.dumps(broken, indent=1))
    (finding,) = cfn_lint_findings([first, tmp_path / "Broken.template.json"])
    assert (
        finding.startswith("Broken.template.json:") and " E3002 " in finding and "NoSuchProperty" in finding
    )
