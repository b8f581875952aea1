"""The CDK app: the ECR and serving stacks of one config (``-c config=FILE``), or its pipeline.

The only place that reads CDK context and config files; the stacks get a validated config. ``smkit synth``
runs it (``python -m stacks.app``) and ``smkit deploy`` hands it to the CDK CLI as ``--app``; the
repository's app.py calls :func:`main` too. Context: ``config`` (the file, relative to the working
directory), ``image_tag`` (deploy that ECR image tag instead of the file's ``build`` or ``ecr`` image, see
smkit/config/overrides.py), ``pipeline=true`` (the CDK Pipelines stack instead). The feature flags below
are the app's defaults, so a project without a cdk.json synthesizes the same templates.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk

from smkit.cdkcli import CDK_CLI_VERSION
from smkit.config import ConfigError, load_config
from smkit.config.overrides import IMAGE_TAG_CONTEXT
from stacks.compliance import add_compliance_checks
from stacks.pipeline_stack import add_pipeline
from stacks.serving_stage import add_serving_stacks

DEFAULT_CONFIG = "config/realtime.yaml"
# aws-cdk-lib feature flags (https://docs.aws.amazon.com/cdk/v2/guide/featureflags.html); the
# validation flags make aws-cdk's own template rules and the cdk-nag report fail the synth.
FEATURE_FLAGS: dict[str, Any] = {
    "@aws-cdk/core:validateAgainstDefaultRules": True,
    "@aws-cdk/core:validationReportJson": True,
    "@aws-cdk/aws-iam:minimizePolicies": True,
    "@aws-cdk/core:enablePartitionLiterals": True,
    "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy": True,
    "@aws-cdk/aws-kms:aliasNameRef": True,
    "@aws-cdk/aws-kms:applyImportedAliasPermissionsToPrincipal": True,
    "@aws-cdk/aws-iam:standardizedServicePrincipals": True,
    "@aws-cdk/core:includePrefixInUniqueNameGeneration": True,
    "@aws-cdk/aws-kms:reduceCrossAccountRegionPolicyScope": True,
    "@aws-cdk/aws-s3:publicAccessBlockedByDefault": True,
    "@aws-cdk/core:defaultCrossStackReferences": "strong",
}


def main(project_root: Path | None = None) -> None:
    """Synthesize the app; ``project_root`` (default: the working directory) anchors a relative config."""
    root = (project_root or Path.cwd()).resolve()
    app = cdk.App(context=FEATURE_FLAGS)  # context given on the command line wins
    config_path = Path(app.node.try_get_context("config") or DEFAULT_CONFIG)
    if not config_path.is_absolute():
        config_path = root / config_path
    try:
        image_tag = app.node.try_get_context(IMAGE_TAG_CONTEXT)
        config = load_config(config_path, image_tag=str(image_tag) if image_tag else None)
        if str(app.node.try_get_context("pipeline")).lower() == "true":
            add_pipeline(
                app,
                config=config,
                config_path=config_path,
                cli_version=CDK_CLI_VERSION,
                project_root=root,
            )
        else:
            add_serving_stacks(app, config=config, project_root=root)
    except (ConfigError, FileNotFoundError, ValueError) as exc:
        sys.exit(f"error: {exc}")
    add_compliance_checks(app)
    app.synth()


if __name__ == "__main__":
    main()
