"""ServingStage: the unit a pipeline deploys, with a concrete account/region and its own cdk-nag packs."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
from stack_support import CONFIG_DIR, ROOT, cdk_context

from smkit.config import load_config
from stacks.serving_stage import ServingStage, stack_ids


def test_stage_with_concrete_environment_passes_its_gates(tmp_path: Path) -> None:
    config = load_config(CONFIG_DIR / "async.yaml").model_copy(
        update={"environment": "prod", "account": "123456789012", "region": "eu-west-1"}
    )
    app = cdk.App(context=cdk_context(), outdir=str(tmp_path))
    stage = ServingStage(
        app,
        "Prod",
        config=config,
        project_root=ROOT,
        env=cdk.Environment(account="123456789012", region="eu-west-1"),
    )
    assembly = app.synth()
    assert stack_ids(config) == ("TabularAsyncProdEcr", "TabularAsyncProdServing")
    assert stage.stacks.serving.stack_name == "Prod-TabularAsyncProdServing"
    assert stage.stacks.ecr is not None and stage.stacks.ecr.stack_name == "Prod-TabularAsyncProdEcr"
    staged = assembly.get_nested_assembly(stage.artifact_id)
    template = staged.get_stack_by_name("Prod-TabularAsyncProdServing").template
    assert "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/sagemaker/Endpoints/*" in json.dumps(template)
    outputs = set(template["Outputs"])
    assert {"EndpointName", "ExecutionRoleArn", "BucketName", "VariantNames", "AsyncInputUri"} <= outputs
