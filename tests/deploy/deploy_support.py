"""Shared helpers of the emulated-deploy tests (a module name no other test directory uses)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk

from smkit.cdk import FEATURE_FLAGS
from smkit.cdk.serving_stage import add_serving_stacks
from smkit.config import DeploymentConfig, load_deployment
from smkit.emulator import DeployedStack, MotoServer
from smkit.emulator.deploy import emulated_image_tag

REPO = Path(__file__).resolve().parents[2]
CONFIGS = sorted((REPO / "config").glob("*.yaml"))
# Stacks deployed at once: the six ECR stacks, then the six serving stacks (measured in the report).
CONCURRENCY = 6


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


def deployed_endpoint(emulator: MotoServer, prefix: str) -> dict[str, Any]:
    """DescribeEndpoint of the one emulated endpoint whose name starts with ``prefix`` (CDK names an
    endpoint after its stack)."""
    sagemaker = emulator.client("sagemaker")
    [summary] = [e for e in sagemaker.list_endpoints()["Endpoints"] if e["EndpointName"].startswith(prefix)]
    endpoint: dict[str, Any] = sagemaker.describe_endpoint(EndpointName=summary["EndpointName"])
    return endpoint


def variant_models(emulator: MotoServer, endpoint: dict[str, Any]) -> list[str]:
    """The model of each production variant of ``endpoint``'s endpoint config, in order."""
    config = emulator.client("sagemaker").describe_endpoint_config(
        EndpointConfigName=endpoint["EndpointConfigName"]
    )
    return [variant["ModelName"] for variant in config["ProductionVariants"]]


def synth_assembly(configs: list[Path], outdir: Path) -> Assembly:
    """Synthesize the stacks of ``configs`` into one cloud assembly at ``outdir``, with the emulated deploy's
    image tag (as ``cdk deploy -c image_tag=...`` would) and app.py's context.

    In this interpreter: the test process's CDK kernel starts, and loads aws-cdk-lib's template validation,
    once for every synth of the session; a child interpreter paid both again (about 8 s of CPU) per call.
    """
    context = {**FEATURE_FLAGS, **json.loads((REPO / "cdk.json").read_text())["context"]}
    context.pop("config", None)
    app = cdk.App(outdir=str(outdir), context=context)
    names: dict[str, dict[str, str | None]] = {}
    for path in configs:
        deployment = load_deployment(path, image_tag=emulated_image_tag(path))
        added = add_serving_stacks(app, deployment=deployment)
        names[path.stem] = {
            "ecr": added.ecr.stack_name if added.ecr else None,
            "serving": added.serving.stack_name,
        }
    app.synth()
    return Assembly(path=outdir, stack_names=names)
