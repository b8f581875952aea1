"""Shared helpers of the emulated-deploy tests (a module name no other test directory uses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from smkit.config import DeploymentConfig
from smkit.emulator import DeployedStack

REPO = Path(__file__).resolve().parents[2]
CONFIGS = sorted((REPO / "config").glob("*.yaml"))
# Stacks deployed at once: the six ECR stacks, then the six serving stacks (measured in the report).
CONCURRENCY = 6

# Builds the stacks of every config given on the command line into one app, with the emulated deploy's image
# tag (as `cdk deploy -c image_tag=...` would); prints config -> stack names.
SYNTH_SCRIPT = """
import json, sys
from pathlib import Path
import aws_cdk as cdk
from smkit.config import load_deployment
from smkit.emulator.deploy import emulated_image_tag
from smkit.cdk import FEATURE_FLAGS
from smkit.cdk.serving_stage import add_serving_stacks
root = Path.cwd()
context = {**FEATURE_FLAGS, **json.loads((root / "cdk.json").read_text())["context"]}
context.pop("config", None)
app = cdk.App(outdir=sys.argv[1], context=context)
names = {}
for path in sys.argv[2:]:
    deployment = load_deployment(path, image_tag=emulated_image_tag(Path(path)))
    added = add_serving_stacks(app, deployment=deployment)
    names[Path(path).stem] = {
        "ecr": added.ecr.stack_name if added.ecr else None,
        "serving": added.serving.stack_name,
    }
app.synth()
print(json.dumps(names))
"""


@dataclass(frozen=True)
class Assembly:
    """The synthesized app of every config: its directory and each config's stack names."""

    path: Path
    stack_names: dict[str, dict[str, str | None]]


@dataclass(frozen=True)
class DeployedConfig:
    """One config as deployed into moto: the config it came from and its stacks (no ECR stack when every
    image is a dlc URI)."""

    config: DeploymentConfig
    ecr: DeployedStack | None
    serving: DeployedStack


def synth_assembly(configs: list[Path], outdir: Path) -> Assembly:
    """Synthesize the stacks of ``configs`` into one cloud assembly at ``outdir``."""
    done = subprocess.run(
        [sys.executable, "-c", SYNTH_SCRIPT, str(outdir), *map(str, configs)],
        cwd=REPO,
        env={**os.environ, "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"synth failed:\n{done.stderr[-4000:]}"
    return Assembly(path=outdir, stack_names=json.loads(done.stdout.strip().splitlines()[-1]))
