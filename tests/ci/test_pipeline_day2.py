"""The pipeline plans each stage's update as ``smkit deploy`` does (smkit.config.day2), from the endpoint each
stage runs now as recorded (context ``deployed_endpoints``): ``-c pipeline=true`` of a config whose variant is
renamed synthesizes a pipeline whose stage deploys without DeploymentConfig; one whose autoscaled variant
changes instance type is refused, naming AWS's procedure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import yaml

from smkit.cdk import FEATURE_FLAGS
from smkit.cdk.deployment import add_deployment
from smkit.cdk.pipeline_stack import PipelineStack
from smkit.config.day2 import DeployedEndpoint

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "config" / "realtime.yaml"


def _absolute(value: Any) -> Any:
    """The config's paths (relative to config/) made absolute, so it loads from another folder."""
    if isinstance(value, dict):
        return {k: _absolute(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_absolute(v) for v in value]
    if isinstance(value, str) and value.startswith("../"):
        return str((CONFIG.parent / value).resolve())
    return value


def _pipeline(tmp_path: Path, data: dict[str, Any], deployed: dict[str, DeployedEndpoint]) -> PipelineStack:
    tmp_path.mkdir(parents=True, exist_ok=True)
    config = tmp_path / "realtime.yaml"
    config.write_text(yaml.safe_dump(_absolute(data)))
    context = {
        **FEATURE_FLAGS,
        **json.loads((REPO / "cdk.json").read_text())["context"],
        "config": str(config),
        "pipeline": "true",
        "deployed_endpoints": json.dumps({stage: json.loads(d.to_json()) for stage, d in deployed.items()}),
    }
    app = cdk.App(context=context, outdir=str(tmp_path / "cdk.out"))
    added = add_deployment(app, project_root=REPO)
    assert isinstance(added, PipelineStack)
    return added


def _endpoint_names(tmp_path: Path) -> dict[str, str]:
    """Each stage's endpoint name (a construct-path name: the same for every content of the config)."""
    pipeline = _pipeline(tmp_path / "shipped", yaml.safe_load(CONFIG.read_text()), {})
    return {
        "staging": pipeline.staging.stacks.serving.endpoint.endpoint_name,
        "prod": pipeline.production.stacks.serving.endpoint.endpoint_name,
    }


def _recorded(names: dict[str, str], data: dict[str, Any]) -> dict[str, DeployedEndpoint]:
    """What each stage runs after deploying ``data``."""
    variants = data["endpoint"]["variants"]
    return {
        stage: DeployedEndpoint(
            name=name,
            production=tuple(v["name"] for v in variants),
            instance_types={v["name"]: v["instance_type"] for v in variants},
            autoscaled=tuple(v["name"] for v in variants if "autoscaling" in v),
        )
        for stage, name in names.items()
    }


def test_pipeline_plans_each_stage_from_the_recorded_endpoint(tmp_path: Path) -> None:
    names = _endpoint_names(tmp_path)

    # A renamed variant (without autoscaling: an autoscaled one would first need its target deregistered):
    # each stage's update goes without DeploymentConfig, as smkit deploy sends it.
    fixed = yaml.safe_load(CONFIG.read_text())
    for variant in fixed["endpoint"]["variants"]:
        del variant["autoscaling"]
    renamed = yaml.safe_load(yaml.safe_dump(fixed))
    renamed["endpoint"]["variants"][1]["name"] = "compute"
    pipeline = _pipeline(tmp_path / "renamed", renamed, _recorded(names, fixed))
    assembly = cdk.App.of(pipeline).synth()  # type: ignore[union-attr]
    for stage in (pipeline.staging, pipeline.production):
        serving = stage.stacks.serving
        assert serving.update_plan.deployment_config is False
        assert "renamed from 'compute-optimized'" in (serving.update_plan.reason or "")
        nested = assembly.get_nested_assembly(stage.artifact_id)
        template = nested.get_stack_by_name(serving.stack_name).template
        [endpoint] = [r for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::Endpoint"]
        assert "DeploymentConfig" not in endpoint["Properties"]

    # The autoscaled variant's instance type changes: the pipeline cannot deregister its scalable target.
    shipped = yaml.safe_load(CONFIG.read_text())
    bigger = yaml.safe_load(CONFIG.read_text())
    bigger["endpoint"]["variants"][0]["instance_type"] = "ml.m5.xlarge"
    with pytest.raises(SystemExit) as refused:
        _pipeline(tmp_path / "bigger", bigger, _recorded(names, shipped))
    message = str(refused.value.code)
    assert message.startswith("error: the staging stage's update changes the instance type of")
    assert "variant(s) general-purpose;" in message
    assert (
        "If the update would change the instance type for any model that is a target for auto scaling"
        in message
    )
    assert "https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-scaling-update.html" in message
    assert f"smkit deploy --config {tmp_path / 'bigger' / 'realtime.yaml'}" in message
