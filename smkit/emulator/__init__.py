"""Emulated AWS for tests, demos and CI rehearsals: moto's server plus the real CDK CLI deploying into it.

- :class:`MotoServer`: start/stop moto's server on a free localhost port (context manager or detached).
- :func:`aws_environment` / :func:`child_environment`: the variables the CDK CLI and boto3 need.
- :func:`deploy_config` / :func:`destroy_app`: ``cdk deploy --all`` / ``cdk destroy --all`` of one config,
  reconciled with its template (:data:`MOTO_SKIPS` lists what moto cannot create, and why).
"""

from smkit.emulator.cdk import CdkCli, CdkError, CdkResult, emulator_cli, repo_root_from
from smkit.emulator.client_env import (
    ACCOUNT_ID,
    DEFAULT_REGION,
    aws_environment,
    child_environment,
    endpoint_url_for,
)
from smkit.emulator.deploy import (
    EMULATED_IMAGE_TAG,
    DeployedApp,
    DeployedStack,
    assembly_stacks,
    deploy_config,
    deployed_stacks,
    destroy_app,
    destroy_config,
    emulated_image_tag,
    ensure_bootstrapped,
)
from smkit.emulator.inventory import (
    MOTO_SKIPS,
    DeployMismatch,
    SkippedResource,
    live_stacks,
    retained_resources,
    sagemaker_resources,
)
from smkit.emulator.moto_server import EmulatorError, MotoServer, running_emulator

__all__ = [
    "ACCOUNT_ID",
    "DEFAULT_REGION",
    "EMULATED_IMAGE_TAG",
    "MOTO_SKIPS",
    "CdkCli",
    "CdkError",
    "CdkResult",
    "DeployMismatch",
    "DeployedApp",
    "DeployedStack",
    "EmulatorError",
    "MotoServer",
    "SkippedResource",
    "assembly_stacks",
    "aws_environment",
    "child_environment",
    "deploy_config",
    "deployed_stacks",
    "destroy_app",
    "destroy_config",
    "emulated_image_tag",
    "emulator_cli",
    "endpoint_url_for",
    "ensure_bootstrapped",
    "live_stacks",
    "repo_root_from",
    "retained_resources",
    "running_emulator",
    "sagemaker_resources",
]
