#!/usr/bin/env python3
"""Your own CDK app with smkit's stacks in it: copy this file into your repository and add your resources.

    pip install "smkit[all]"
    npx aws-cdk@2.1148.1 synth --app "python app.py" -c config=config/NAME.yaml

Everything comes from ``smkit.cdk``'s public API (docs/cdk-constructs.md): the stacks of one deployment
config (``smkit.config.load_deployment``) from ``add_serving_stacks`` (what ``smkit synth`` composes too);
your own stack uses what they expose, here the endpoint's metric helper for a CloudWatch dashboard. ``FEATURE_FLAGS`` and
``add_compliance_checks`` keep the templates and the cdk-nag gate exactly as ``smkit synth`` makes them.
"""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from smkit.cdk import FEATURE_FLAGS, IEndpoint, add_compliance_checks, add_serving_stacks
from smkit.config import load_deployment


class Dashboard(cdk.Stack):
    """A stack of your own: a dashboard of the endpoint's invocations and errors, one graph per variant.

    SageMaker publishes invocation metrics per EndpointName and VariantName: a metric of the endpoint
    name alone has no data (https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html)."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        endpoint: IEndpoint,
        **kwargs: object,
    ) -> None:
        super().__init__(scope, id_, **kwargs)  # type: ignore[arg-type]
        board = cloudwatch.Dashboard(self, "Dashboard")
        for name in endpoint.variant_names:
            variant = endpoint.variant(name)
            board.add_widgets(
                cloudwatch.GraphWidget(
                    title=f"Invocations of {name}",
                    left=[variant.metric_invocations()],
                    right=[variant.metric_invocation_5xx_errors(), variant.metric_invocation_4xx_errors()],
                )
            )


def main() -> None:
    app = cdk.App(context=FEATURE_FLAGS)
    config_path = Path(app.node.try_get_context("config") or "config/serving.yaml").resolve()
    added = add_serving_stacks(app, deployment=load_deployment(config_path))
    Dashboard(
        app,
        f"{added.serving.stack_name}Dashboard",
        endpoint=added.serving.endpoint,
    )
    add_compliance_checks(app)
    app.synth()


if __name__ == "__main__":
    main()
