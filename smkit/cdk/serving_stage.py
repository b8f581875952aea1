"""Put the stacks of one deployment config into any scope (an App, a Stage, a pipeline's Stage).

Stack construct ids are stable; CloudFormation stack names derive from them (prefixed by the Stage's
name inside a Stage). With ``Name`` = PascalCase of ``config.name`` and ``Env`` of ``config.environment``:

- ``<Name><Env>Ecr``      -- :class:`smkit.cdk.ecr_stack.EcrStack` (skipped when a repository is passed in
  or every image is a ``dlc`` URI), with the config's ``security.repository`` options,
  e.g. ``TabularRealtimeDevEcr``; outputs ``RepositoryUri``, ``RepositoryName`` (+ ``SigningProfileArn``).
- ``<Name><Env>Serving``  -- :class:`smkit.cdk.serving_stack.ServingStack`, e.g. ``TabularRealtimeDevServing``;
  outputs ``EndpointName``, ``ExecutionRoleArn``, ``BucketName``, ``VariantNames``,
  ``KmsKeyArn`` (+ ``AlarmTopicArn``, ``DashboardName``; async: ``AsyncInputUri``, ``AsyncOutputUri``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ecr as ecr
from constructs import Construct

from smkit.cdk.compliance import add_compliance_checks
from smkit.cdk.ecr_stack import EcrStack
from smkit.cdk.mapping import pascal
from smkit.cdk.serving_stack import ServingStack
from smkit.config import DeploymentConfig
from smkit.config.day2 import DeployedEndpoint
from smkit.config.resolved import deployment_of


@dataclass(frozen=True)
class ServingStacks:
    """The stacks added for one config (``ecr`` is None when an existing repository was used)."""

    ecr: EcrStack | None
    serving: ServingStack


def stack_ids(config: DeploymentConfig) -> tuple[str, str]:
    """``(ecr stack id, serving stack id)`` of ``config``."""
    base = pascal(config.name) + pascal(config.environment)
    return f"{base}Ecr", f"{base}Serving"


def needs_repository(config: DeploymentConfig, project_root: Path) -> bool:
    """Whether the config pulls from (``ecr``) or is published to (``build``, CI path) this kit's repository.

    Deployments whose every image is a full ``dlc`` URI get no (unused, retained) repository stack."""
    return deployment_of(config, project_root).uses_repository


def add_serving_stacks(
    scope: Construct,
    *,
    config: DeploymentConfig,
    project_root: Path,
    repository: ecr.IRepository | None = None,
    previous_s3_uris: Sequence[str] = (),
    deployed: DeployedEndpoint | None = None,
) -> ServingStacks:
    """Add the ECR stack (unless ``repository`` is given) and the serving stack for ``config`` to ``scope``.

    ``previous_s3_uris``: S3 data of recorded releases the execution role keeps reading
    (:class:`smkit.cdk.serving_stack.ServingStack`); ``deployed``: the endpoint SageMaker runs now
    (:func:`smkit.config.day2.plan_update`)."""
    ecr_id, serving_id = stack_ids(config)
    env = cdk.Environment(account=config.account, region=config.region)
    common: dict[str, Any] = {"env": env}
    ecr_stack = None
    if repository is None and needs_repository(config, project_root):
        ecr_stack = EcrStack(
            scope,
            ecr_id,
            description=f"ECR repository of the {config.name} serving image",
            enhanced_scanning=config.security.repository.enhanced_scanning,
            signing=config.security.repository.signing,
            **common,
        )
        repository = ecr_stack.repository
    serving = ServingStack(
        scope,
        serving_id,
        config=config,
        repository=repository,
        project_root=project_root,
        previous_s3_uris=previous_s3_uris,
        deployed=deployed,
        description=config.description or f"SageMaker {config.endpoint.type} endpoint {config.name}",
        **common,
    )
    for stack in (ecr_stack, serving):
        if stack is None:
            continue
        cdk.Tags.of(stack).add("smkit:deployment", config.name)
        cdk.Tags.of(stack).add("smkit:environment", config.environment)
        for key, value in config.tags.items():
            cdk.Tags.of(stack).add(key, value)
    return ServingStacks(ecr=ecr_stack, serving=serving)


class ServingStage(cdk.Stage):
    """A deployable unit (e.g. a pipeline's staging or prod step) holding the stacks of one config.

    The cdk-nag packs are registered on the stage, so a pipeline synth is gated like ``cdk synth``.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        config: DeploymentConfig,
        project_root: Path = Path("."),
        compliance_checks: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id_, **kwargs)
        self.stacks = add_serving_stacks(self, config=config, project_root=project_root)
        if compliance_checks:
            add_compliance_checks(self)
