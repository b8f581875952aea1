"""examples/cdk-app/app.py, an app of your own using the stacks' building blocks, synthesizes with the
cdk-nag packs and aws-cdk's template rules as errors (the app runs them), and cfn-lint finds nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from stack_support import ROOT, cfn_lint_findings

pytestmark = pytest.mark.slow


def test_the_example_app_synthesizes_clean(tmp_path: Path) -> None:
    out = tmp_path / "cdk.out"
    env = {
        **os.environ,
        "CDK_OUTDIR": str(out),
        "CDK_CONTEXT_JSON": json.dumps({"config": str(ROOT / "config" / "realtime.yaml")}),
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "cdk-app" / "app.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    templates = sorted(out.glob("*.template.json"))
    assert [t.name for t in templates] == [
        "TabularRealtimeDevEcr.template.json",
        "TabularRealtimeDevServing.template.json",
        "TabularRealtimeDevServingDashboard.template.json",
    ]
    dashboard = json.loads(templates[2].read_text())["Resources"]
    assert [r["Type"] for r in dashboard.values()] == ["AWS::CloudWatch::Dashboard"]
    # Every metric is dimensioned by endpoint and variant (SageMaker publishes none per endpoint alone).
    body = json.dumps(next(iter(dashboard.values()))["Properties"]["DashboardBody"])
    assert body.count('\\"VariantName\\"') == body.count('\\"EndpointName\\"') > 0, body
    findings = cfn_lint_findings(templates)
    assert findings == []
