"""One deployment config, composed into a CDK app: what ``smkit synth``, ``smkit deploy`` and your own app run.

:func:`add_deployment` reads the app's context the way the default app (``python -m smkit.cdk.app``) does:
``config`` (the file, relative to ``project_root``; default :data:`DEFAULT_CONFIG`), ``image_tag`` (deploy
that ECR image tag instead of the file's ``build`` or ``ecr`` image, smkit/config/overrides.py) and
``pipeline=true`` (the CDK Pipelines stack instead of the serving stacks) and ``previous_s3_uris`` (a JSON
list of the S3 model data and adapter weights recorded releases ran, which the execution role keeps reading;
``smkit deploy`` passes it from the release history) and ``deployed_endpoint`` (the endpoint SageMaker runs
now, smkit.config.day2; ``smkit deploy`` reads it); with ``pipeline=true``, ``deployed_endpoints`` (the
endpoint each stage runs now, as recorded: ``{"staging": {...}, "prod": {...}}``) plans each stage's update
the same way. :data:`FEATURE_FLAGS` are the
aws-cdk-lib feature flags every smkit template is synthesized with; pass them as the ``cdk.App``'s context
so a project without a cdk.json synthesizes the same templates.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aws_cdk as cdk

from smkit.cdk.compliance import add_compliance_checks
from smkit.cdk.pipeline_stack import PipelineCommands, PipelineStack, add_pipeline
from smkit.cdk.serving_stage import ServingStacks, add_serving_stacks
from smkit.config import ConfigError, load_deployment
from smkit.config.day2 import DeployedEndpoint
from smkit.config.overrides import (
    DEPLOYED_ENDPOINT_CONTEXT,
    DEPLOYED_ENDPOINTS_CONTEXT,
    IMAGE_TAG_CONTEXT,
    PREVIOUS_S3_CONTEXT,
)
from smkit.ops.cdk_cli import CDK_CLI_VERSION

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


def add_deployment(
    app: cdk.App,
    *,
    project_root: Path,
    config_path: Path | None = None,
    pipeline_commands: Callable[[str], PipelineCommands] | None = None,
) -> ServingStacks | PipelineStack:
    """Add the stacks of one deployment config to ``app`` and register the cdk-nag packs on it.

    ``config_path`` (default: the ``config`` context, else :data:`DEFAULT_CONFIG`) is relative to
    ``project_root``, which also anchors every path inside the config. Returns the ECR and serving stacks,
    or the pipeline stack with ``-c pipeline=true``, whose CodeBuild steps run ``pipeline_commands`` of the
    config file (relative to ``project_root``; default :meth:`PipelineCommands.for_project`, the smkit CLI in
    a project made by ``smkit init``). A config that does not load or validate ends the
    program with ``error: <the message>`` (exit status 1), as ``cdk synth`` should show it.
    """
    root = project_root.resolve()
    path = config_path or Path(app.node.try_get_context("config") or DEFAULT_CONFIG)
    if not path.is_absolute():
        path = root / path
    added: ServingStacks | PipelineStack
    try:
        image_tag = app.node.try_get_context(IMAGE_TAG_CONTEXT)
        deployment = load_deployment(path, image_tag=str(image_tag) if image_tag else None)
        if str(app.node.try_get_context("pipeline")).lower() == "true":
            added = add_pipeline(
                app,
                deployment=deployment,
                config_path=path,
                cli_version=CDK_CLI_VERSION,
                project_root=root,
                commands=pipeline_commands,
                deployed=deployed_endpoints(app),
                previous_s3_uris=previous_s3_uris(app),
            )
        else:
            deployed = app.node.try_get_context(DEPLOYED_ENDPOINT_CONTEXT)
            added = add_serving_stacks(
                app,
                deployment=deployment,
                previous_s3_uris=previous_s3_uris(app),
                deployed=DeployedEndpoint.from_json(deployed) if deployed else None,
            )
    except (ConfigError, FileNotFoundError, ValueError) as exc:
        sys.exit(f"error: {exc}")
    add_compliance_checks(app)
    return added


def previous_s3_uris(app: cdk.App) -> list[str]:
    """The ``previous_s3_uris`` context: a JSON list of S3 URIs (or a list, from cdk.json); empty when unset."""
    value = app.node.try_get_context(PREVIOUS_S3_CONTEXT)
    if value is None or value == "":
        return []
    try:
        uris = json.loads(value) if isinstance(value, str) else value
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"context {PREVIOUS_S3_CONTEXT}: {value!r} is not a JSON list of S3 URIs ({exc})"
        ) from None
    if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
        raise ValueError(f"context {PREVIOUS_S3_CONTEXT}: {value!r} is not a JSON list of S3 URIs")
    return uris


def deployed_endpoints(app: cdk.App) -> dict[str, DeployedEndpoint]:
    """The ``deployed_endpoints`` context: stage (``staging``, ``prod``) -> the endpoint it runs now."""
    value = app.node.try_get_context(DEPLOYED_ENDPOINTS_CONTEXT)
    if value is None or value == "":
        return {}
    try:
        data = json.loads(value) if isinstance(value, str) else value
    except json.JSONDecodeError as exc:
        raise ValueError(f"context {DEPLOYED_ENDPOINTS_CONTEXT}: {value!r} is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(
            f"context {DEPLOYED_ENDPOINTS_CONTEXT}: {value!r} is not "
            '{"staging": {"name": ENDPOINT, "production": [VARIANT, ...], ...}, "prod": {...}}'
        )
    return {str(stage): DeployedEndpoint.from_json(record) for stage, record in data.items()}
