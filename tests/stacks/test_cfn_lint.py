"""cfn-lint over every synthesized template, no rule ignored: 0 errors and 0 warnings (informational style
hints such as I1022 "prefer Fn::Sub", which CDK's output trips everywhere, are not gated)."""

from __future__ import annotations

from pathlib import Path

from cfnlint.api import ManualArgs, lint_file
from stack_support import SynthesizedApp

# Every rule this gate ignores, with the reason. Keep it empty unless a finding is wrong for a good reason.
IGNORED_RULES: dict[str, str] = {}
REGIONS = ["us-east-1"]


def test_cfn_lint_is_clean_on_every_template(synthesized: SynthesizedApp) -> None:
    files = synthesized.template_files()
    stacks = sum(1 + (s.ecr is not None) for s in synthesized.stacks.values())
    assert len(files) == stacks
    config = ManualArgs(regions=REGIONS, ignore_checks=list(IGNORED_RULES))
    findings = []
    for path in files:
        for match in lint_file(Path(path), config=config):
            findings.append(f"{path.name}:{match.linenumber}: {match.rule.id} {match.message}")
    assert findings == [], "\n".join(findings)
