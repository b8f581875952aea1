"""smkit.cdk is the construct library's public API: every name it exports is importable and documented, and
importing it without the ``cdk`` extra says which install fixes it (the rest of smkit still imports)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import smkit.cdk
from smkit.cdk import compose
from smkit.ops.cdk_cli import CDK_CLI_VERSION

REPO = Path(__file__).resolve().parents[2]

# A Python without aws-cdk-lib: a meta-path finder refuses it the way a missing distribution does.
WITHOUT_CDK = """
import sys

class NoCdk:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "aws_cdk":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoCdk())
import smkit.cli, smkit.config, smkit.local, smkit.serving  # the rest of smkit needs no CDK
import smkit.cdk
"""


def test_every_exported_name_exists_and_is_documented() -> None:
    page = (REPO / "docs" / "cdk-constructs.md").read_text(encoding="utf-8")
    spans = re.findall(r"`([^`]+)`", page.replace("```", ""))
    documented = {word for span in spans for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", span)}
    assert [name for name in smkit.cdk.__all__ if not hasattr(smkit.cdk, name)] == []
    assert sorted(set(smkit.cdk.__all__) - documented) == []


def test_the_documented_construct_composition_synthesizes_clean() -> None:
    # The docs' example of composing the constructs without a config, run as written, cdk-nag packs included.
    page = (REPO / "docs" / "cdk-constructs.md").read_text(encoding="utf-8")
    section = page.split("### Composing the constructs yourself", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    names: dict[str, Any] = {}
    exec(compile(code, "docs/cdk-constructs.md", "exec"), names)  # app.synth() raises on a cdk-nag finding
    template = json.loads((Path(names["app"].outdir) / "Churn.template.json").read_text())
    types = {r["Type"] for r in template["Resources"].values()}
    assert {"AWS::SageMaker::Model", "AWS::SageMaker::EndpointConfig", "AWS::SageMaker::Endpoint"} <= types
    (model,) = (r for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::Model")
    assert model["Properties"]["PrimaryContainer"]["ModelDataUrl"] == "s3://my-models/churn/model.tar.gz"


def test_the_default_app_and_the_repository_app_compose_with_the_same_function() -> None:
    assert smkit.cdk.add_deployment is compose.add_deployment
    for app in ("smkit/cdk/app.py", "stacks/app.py"):
        source = (REPO / app).read_text(encoding="utf-8")
        assert "add_deployment(app, project_root=" in source and "add_serving_stacks" not in source, app


def test_importing_without_the_cdk_extra_names_the_install() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_CDK], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "ModuleNotFoundError: smkit.cdk needs the AWS CDK libraries, and 'aws_cdk' is not installed: "
        'pip install "smkit[cdk]" (or "smkit[all]")'
    ), done.stderr[-2000:]


def test_every_documented_cdk_cli_is_the_pinned_one() -> None:
    # A user's `npx aws-cdk@X` must read the cloud assemblies of the aws-cdk-lib smkit pins.
    texts = [
        REPO / "README.md",
        *sorted((REPO / "docs").rglob("*.md")),
        *sorted((REPO / "docs" / "journeys").glob("*.sh")),
        *sorted((REPO / "examples").rglob("*.py")),
    ]
    named = {
        f"{path.relative_to(REPO)}: {version}"
        for path in texts
        for version in re.findall(r"aws-cdk@(\d[\w.]*)", path.read_text(encoding="utf-8"))
        if version != CDK_CLI_VERSION
    }
    assert named == set()
