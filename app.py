#!/usr/bin/env python3
"""CDK app: ``cdk synth -c config=config/<name>.yaml`` (default ``config/realtime.yaml``).

The only place that reads CDK context and config files; the stacks get a validated config. Context:
``config`` (the file), ``image_tag`` (deploy that ECR image tag instead of the file's ``build`` or ``ecr``
image, see smkit/config/overrides.py), ``pipeline=true`` (the CDK Pipelines stack instead).
"""

from __future__ import annotations

import sys
from pathlib import Path

import aws_cdk as cdk

from smkit.config import ConfigError, load_config
from smkit.config.overrides import IMAGE_TAG_CONTEXT
from stacks.compliance import add_compliance_checks
from stacks.pipeline_stack import add_pipeline, cdk_cli_version
from stacks.serving_stage import add_serving_stacks

PROJECT_ROOT = Path(__file__).resolve().parent
DEFAULT_CONFIG = "config/realtime.yaml"


def main() -> None:
    app = cdk.App()
    config_path = Path(app.node.try_get_context("config") or DEFAULT_CONFIG)
    if not config_path.is_absolute():
        config_path = PROJECT_ROOT / config_path
    try:
        image_tag = app.node.try_get_context(IMAGE_TAG_CONTEXT)
        config = load_config(config_path, image_tag=str(image_tag) if image_tag else None)
        if str(app.node.try_get_context("pipeline")).lower() == "true":
            cli_version = cdk_cli_version(PROJECT_ROOT / "package.json")
            add_pipeline(
                app,
                config=config,
                config_path=config_path,
                cli_version=cli_version,
                project_root=PROJECT_ROOT,
            )
        else:
            add_serving_stacks(app, config=config, project_root=PROJECT_ROOT)
    except (ConfigError, FileNotFoundError, ValueError) as exc:
        sys.exit(f"error: {exc}")
    add_compliance_checks(app)
    app.synth()


if __name__ == "__main__":
    main()
