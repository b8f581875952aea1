#!/usr/bin/env python3
"""Your own CDK app with smkit's stacks in it: copy this file into your repository and add your resources.

    pip install "smkit[all]"
    npx aws-cdk@2.1148.1 synth --app "python app.py" -c config=config/NAME.yaml

The stacks of one deployment config come from ``stacks.serving_stage.add_serving_stacks`` (the same
function ``smkit synth`` runs); your own stack uses what they expose, here the endpoint's metric helper for
a CloudWatch dashboard. ``FEATURE_FLAGS`` and ``add_compliance_checks`` keep the templates and the cdk-nag
gate exactly as ``smkit synth`` makes them.
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from smkit.config import load_config
from stacks.app import FEATURE_FLAGS
from stacks.compliance import add_compliance_checks
from stacks.constructs.endpoint import InferenceEndpoint
from stacks.serving_stage import add_serving_stacks


class Dashboard(cdk.Stack):
    """A stack of your own: a dashboard of the endpoint's invocations and errors."""

    def __init__(self, scope: Construct, id_: str, *, endpoint: InferenceEndpoint, **kwargs: object) -> None:
        super().__init__(scope, id_, **kwargs)  # type: ignore[arg-type]
        board = cloudwatch.Dashboard(self, "Dashboard")
        board.add_widgets(
            cloudwatch.GraphWidget(
                title="Invocations",
                left=[endpoint.metric("Invocations")],
                right=[endpoint.metric("Invocation5XXErrors"), endpoint.metric("Invocation4XXErrors")],
            )
        )


def main() -> None:
    app = cdk.App(context=FEATURE_FLAGS)
    config_path = Path(app.node.try_get_context("config") or "config/serving.yaml").resolve()
    config = load_config(config_path)
    stacks = add_serving_stacks(app, config=config, project_root=Path.cwd())
    endpoint = getattr(stacks.serving, "endpoint", None)
    if isinstance(endpoint, InferenceEndpoint):  # inference-component endpoints expose their components
        Dashboard(app, f"{stacks.serving.stack_name}Dashboard", endpoint=endpoint)
    add_compliance_checks(app)
    app.synth()


if __name__ == "__main__":
    main()
