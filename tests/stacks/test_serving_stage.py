"""ServingStage: the unit a pipeline deploys, with a concrete account/region and its own cdk-nag packs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from stack_support import CONFIG_DIR, cdk_context

from smkit.cdk.serving_stage import ServingStage, stack_ids
from smkit.config import load_deployment

ACCOUNT, REGION = "123456789012", "eu-west-1"


@pytest.mark.parametrize("name", ["async", "multi-model"])
def test_stage_with_concrete_environment_passes_its_gates(tmp_path: Path, name: str) -> None:
    deployment = dataclasses.replace(
        load_deployment(CONFIG_DIR / f"{name}.yaml"), environment="prod", account=ACCOUNT, region=REGION
    )
    app = cdk.App(context=cdk_context(), outdir=str(tmp_path))
    env = cdk.Environment(account=ACCOUNT, region=REGION)
    stage = ServingStage(app, "Prod", deployment=deployment, env=env)
    assembly = app.synth()
    ecr_id, serving_id = stack_ids(deployment)
    assert serving_id.endswith("ProdServing") and ecr_id.endswith("ProdEcr")
    assert stage.stacks.serving.stack_name == f"Prod-{serving_id}"
    assert stage.stacks.ecr is not None and stage.stacks.ecr.stack_name == f"Prod-{ecr_id}"
    template = (
        assembly.get_nested_assembly(stage.artifact_id).get_stack_by_name(f"Prod-{serving_id}").template
    )
    # The role writes to its endpoint's own log group, named by ARN, not to every endpoint's group.
    assert '"Sid": "ContainerLogs"' in json.dumps(template)
    assert "/aws/sagemaker/Endpoints/*" not in json.dumps(template)
    assert {"EndpointName", "ExecutionRoleArn", "BucketName", "VariantNames"} <= set(template["Outputs"])
