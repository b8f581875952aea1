"""The pipeline plans each stage's update as ``smkit deploy`` does (smkit.config.day2), from the endpoint each
stage runs now (context ``deployed_endpoints``), which its synth step reads in the stage's account
(``smkit synth --read-stages``, smkit.release.stage_state; here from moto's server as the stage accounts):
``-c pipeline=true`` of a config whose variant is renamed synthesizes a pipeline whose stage deploys without
DeploymentConfig; one whose autoscaled variant changes instance type is refused, naming AWS's procedure."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import yaml

from smkit.aws.cdk_bootstrap import lookup_role_arn
from smkit.cdk import FEATURE_FLAGS
from smkit.cdk.compose import add_deployment
from smkit.cdk.pipeline_stack import PipelineStack
from smkit.config.day2 import DeployedEndpoint
from smkit.emulator import MotoServer
from smkit.release.history import DeployedContainer, Release, release_parameter
from smkit.release.stage_state import Stage, pipeline_context, session_for, stages
from smkit.release.stage_state import main as stage_state_main

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


def _pipeline(
    tmp_path: Path,
    data: dict[str, Any],
    deployed: dict[str, DeployedEndpoint],
    read: list[str] | None = None,
) -> PipelineStack:
    """The pipeline of ``data`` with the stages' endpoints ``deployed``, or the context ``read`` from them
    (smkit.release.stage_state.pipeline_context, KEY=VALUE lines)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    config = tmp_path / "realtime.yaml"
    config.write_text(yaml.safe_dump(_absolute(data)))
    context = {
        **FEATURE_FLAGS,
        **json.loads((REPO / "cdk.json").read_text())["context"],
        "config": str(config),
        "pipeline": "true",
        "deployed_endpoints": json.dumps({stage: json.loads(d.to_json()) for stage, d in deployed.items()}),
        **dict(line.split("=", 1) for line in read or []),
    }
    app = cdk.App(context=context, outdir=str(tmp_path / "cdk.out"))
    added = add_deployment(app, project_root=REPO)
    assert isinstance(added, PipelineStack)
    return added


def _shipped(tmp_path: Path) -> tuple[PipelineStack, Path]:
    """The pipeline of the shipped config and its cloud assembly."""
    pipeline = _pipeline(tmp_path / "shipped", yaml.safe_load(CONFIG.read_text()), {})
    assembly = cdk.App.of(pipeline).synth()  # type: ignore[union-attr]
    return pipeline, Path(assembly.directory)


def _endpoint_names(pipeline: PipelineStack) -> dict[str, str]:
    """Each stage's endpoint name (a construct-path name: the same for every content of the config)."""
    return {
        "staging": pipeline.staging.stacks.serving.endpoint.endpoint_name,
        "prod": pipeline.production.stacks.serving.endpoint.endpoint_name,
    }


def _run_in_stage(stage: Stage, data: dict[str, Any], *, model_data: str) -> None:
    """The stage's account (moto's, reached through the stage's lookup role) runs ``data``'s variants, autoscaled
    as the config says, and has one release recorded whose model data is ``model_data``."""
    session = session_for(stage, role_arn=lookup_role_arn(stage.account, stage.region))
    assert session.client("sts").get_caller_identity()["Account"] == stage.account
    sagemaker = session.client("sagemaker")
    role = f"arn:aws:iam::{stage.account}:role/execution"
    image = f"{stage.account}.dkr.ecr.{stage.region}.amazonaws.com/serving:1"
    variants = data["endpoint"]["variants"]
    for v in variants:
        sagemaker.create_model(
            ModelName=f"m-{v['name']}", ExecutionRoleArn=role, PrimaryContainer={"Image": image}
        )
    sagemaker.create_endpoint_config(
        EndpointConfigName=f"{stage.endpoint}-1",
        ProductionVariants=[
            {
                "VariantName": v["name"],
                "ModelName": f"m-{v['name']}",
                "InstanceType": v["instance_type"],
                "InitialInstanceCount": 1,
            }
            for v in variants
        ],
    )
    sagemaker.create_endpoint(EndpointName=stage.endpoint, EndpointConfigName=f"{stage.endpoint}-1")
    autoscaling = session.client("application-autoscaling")
    for v in variants:
        if "autoscaling" in v:
            autoscaling.register_scalable_target(
                ServiceNamespace="sagemaker",
                ResourceId=f"endpoint/{stage.endpoint}/variant/{v['name']}",
                ScalableDimension="sagemaker:variant:DesiredInstanceCount",
                MinCapacity=1,
                MaxCapacity=2,
            )
    release = Release(stage.endpoint, (DeployedContainer(image, model_data),), "2026-01-01T00:00:00Z")
    session.client("ssm").put_parameter(
        Name=release_parameter(data["name"], stage.environment),
        Value=json.dumps([release.to_json()]),
        Type="String",
    )


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


def test_pipeline_plans_each_stage_from_the_recorded_endpoint(
    tmp_path: Path, aws: MotoServer, capsys: pytest.CaptureFixture[str]
) -> None:
    shipped_pipeline, shipped_assembly = _shipped(tmp_path)
    names = _endpoint_names(shipped_pipeline)

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

    # What the pipeline's synth step reads (smkit synth --read-stages): each stage's serving stack and endpoint
    # from the assembly, then what the endpoint runs and the recorded releases, in the stage's account through
    # its CDK lookup role (the synth step's role may assume exactly those two).
    found = stages(shipped_assembly)
    assert {s.environment: s.endpoint for s in found} == names
    assert {(s.account, s.region) for s in found} == {
        ("222222222222", "eu-west-1"),
        ("333333333333", "eu-west-1"),
    }
    template = json.loads((shipped_assembly / f"{shipped_pipeline.stack_name}.template.json").read_text())
    assumed = [
        statement["Resource"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy"
        for statement in r["Properties"]["PolicyDocument"]["Statement"]
        if statement["Action"] == "sts:AssumeRole" and "lookup-role" in json.dumps(statement["Resource"])
    ]
    assert assumed == [[lookup_role_arn(s.account, s.region) for s in found]]
    assert pipeline_context(shipped_assembly, "tabular-realtime") == []  # nothing deployed yet

    # The autoscaled variant's instance type changes against what staging runs: refused, naming the procedure.
    shipped = yaml.safe_load(CONFIG.read_text())
    [staging] = [s for s in found if s.environment == "staging"]
    _run_in_stage(staging, shipped, model_data="s3://older-models/tabular/model.tar.gz")
    read = pipeline_context(shipped_assembly, shipped["name"])
    assert [line.split("=", 1)[0] for line in read] == ["deployed_endpoints", "previous_s3_uris"]
    deployed = json.loads(read[0].split("=", 1)[1])
    assert list(deployed) == ["staging"]
    assert deployed["staging"]["autoscaled"] == sorted(
        v["name"] for v in shipped["endpoint"]["variants"] if "autoscaling" in v
    )
    assert json.loads(read[1].split("=", 1)[1]) == ["s3://older-models/tabular/model.tar.gz"]
    # The same as shell arguments, for a synth step of its own (scripts/gates.py).
    stage_state_main([str(CONFIG), str(shipped_assembly)])
    assert shlex.split(capsys.readouterr().out) == ["-c", read[0], "-c", read[1]]
    bigger = yaml.safe_load(CONFIG.read_text())
    bigger["endpoint"]["variants"][0]["instance_type"] = "ml.m5.xlarge"
    with pytest.raises(SystemExit) as refused:
        _pipeline(tmp_path / "bigger", bigger, {}, read)
    message = str(refused.value.code)
    assert message.startswith("error: the staging stage's update changes the instance type of")
    assert "variant(s) general-purpose;" in message
    assert (
        "If the update would change the instance type for any model that is a target for auto scaling"
        in message
    )
    assert "https://docs.aws.amazon.com/sagemaker/latest/dg/endpoint-scaling-update.html" in message
    assert f"smkit deploy --config {tmp_path / 'bigger' / 'realtime.yaml'}" in message
