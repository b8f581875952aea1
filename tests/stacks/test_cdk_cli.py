"""``cdk synth`` through the pinned CLI (``npx cdk``) works offline with no AWS credentials, and app.py
reports a bad config path clearly."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from stack_support import ROOT

pytestmark = pytest.mark.slow


def _offline_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CDK_"))}
    env.update(
        {
            "AWS_CONFIG_FILE": str(tmp_path / "no-config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-credentials"),
            "AWS_EC2_METADATA_DISABLED": "true",
            "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
            "CDK_DISABLE_VERSION_CHECK": "true",
        }
    )
    return env


def test_npx_cdk_synth_offline_without_credentials(tmp_path: Path) -> None:
    npx = shutil.which("npx")
    assert npx, "npx (Node.js) is required"
    out = tmp_path / "cdk.out"
    result = subprocess.run(
        [
            npx,
            "--no-install",
            "cdk",
            "synth",
            "--quiet",
            "--no-notices",
            "-c",
            "config=config/serverless.yaml",
            "--output",
            str(out),
        ],
        cwd=ROOT,
        env=_offline_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    manifest = json.loads((out / "manifest.json").read_text())
    stacks = {name for name, a in manifest["artifacts"].items() if a["type"] == "aws:cloudformation:stack"}
    assert stacks == {"TabularServerlessDevEcr", "TabularServerlessDevServing"}


def test_app_reports_a_missing_config(tmp_path: Path) -> None:
    env = _offline_env(tmp_path)
    env["CDK_CONTEXT_JSON"] = json.dumps({"config": "config/nope.yaml"})
    env["CDK_OUTDIR"] = str(tmp_path / "cdk.out")
    result = subprocess.run(
        [sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1
    assert "config/nope.yaml" in result.stderr and "no such file" in result.stderr
