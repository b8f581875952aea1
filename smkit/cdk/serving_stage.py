"""Put the stacks of one resolved deployment into any scope (an App, a Stage, a pipeline's Stage).

Stack construct ids are stable; CloudFormation stack names derive from them (prefixed by the Stage's
name inside a Stage). With ``Name`` = PascalCase of the deployment's ``name`` and ``Env`` of its
``environment``:

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
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ecr as ecr
from constructs import Construct

from smkit.cdk.compliance import add_compliance_checks
from smkit.cdk.ecr_stack import EcrStack
from smkit.cdk.serving_stack import ServingStack
from smkit.config.day2 import DeployedEndpoint
from smkit.config.resolved import ResolvedDeployment
from smkit.config.resolved.names import serving_stack_id


@dataclass(frozen=True)
class ServingStacks:
    """The stacks added for one config (``ecr`` is None when an existing repository was used)."""

    ecr: EcrStack | None
    serving: ServingStack


def stack_ids(deployment: ResolvedDeployment) -> tuple[str, str]:
    """``(ecr stack id, serving stack id)`` of ``deployment``."""
    serving = serving_stack_id(deployment)  # the names of the endpoint and components derive from it
    return f"{serving.removesuffix('Serving')}Ecr", serving


def add_serving_stacks(
    scope: Construct,
    *,
    deployment: ResolvedDeployment,
    repository: ecr.IRepository | None = None,
    previous_s3_uris: Sequence[str] = (),
    deployed: DeployedEndpoint | None = None,
) -> ServingStacks:
    """Add the ECR stack (unless ``repository`` is given) and the serving stack of ``deployment`` to ``scope``.

    ``deployment``: :func:`smkit.config.load_deployment` of a config file, or
    :func:`smkit.config.resolved.resolve` of a config built from data. The ECR stack is added when some
    image is pulled from (``ecr``) or published to (``build``, CI path) this kit's repository; deployments whose
    every image is a full ``dlc`` URI get no (unused, retained) repository stack.

    ``previous_s3_uris``: S3 data of recorded releases the execution role keeps reading
    (:class:`smkit.cdk.serving_stack.ServingStack`); ``deployed``: the endpoint SageMaker runs now
    (:func:`smkit.config.day2.plan_update`)."""
    d = deployment
    ecr_id, serving_id = stack_ids(d)
    env = cdk.Environment(account=d.account, region=d.region)
    common: dict[str, Any] = {"env": env}
    ecr_stack = None
    if repository is None and d.uses_repository:
        ecr_stack = EcrStack(
            scope,
            ecr_id,
            description=f"ECR repository of the {d.name} serving image",
            enhanced_scanning=d.repository.enhanced_scanning,
            signing=d.repository.signing,
            **common,
        )
        repository = ecr_stack.repository
    serving = ServingStack(
        scope,
        serving_id,
        deployment=d,
        repository=repository,
        previous_s3_uris=previous_s3_uris,
        deployed=deployed,
        description=d.description or f"SageMaker {d.endpoint_type} endpoint {d.name}",
        **common,
    )
    for stack in (ecr_stack, serving):
        if stack is None:
            continue
        cdk.Tags.of(stack).add("smkit:deployment", d.name)
        cdk.Tags.of(stack).add("smkit:environment", d.environment)
        for key, value in d.tags.items():
            cdk.Tags.of(stack).add(key, value)
    return ServingStacks(ecr=ecr_stack, serving=serving)


class ServingStage(cdk.Stage):
    """A deployable unit (e.g. a pipeline's staging or prod step) holding the stacks of one deployment.

    The cdk-nag packs are registered on the stage, so a pipeline synth is gated like ``cdk synth``.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        deployment: ResolvedDeployment,
        compliance_checks: bool = True,
        previous_s3_uris: Sequence[str] = (),
        deployed: DeployedEndpoint | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, id_, **kwargs)
        self.stacks = add_serving_stacks(
            self, deployment=deployment, previous_s3_uris=previous_s3_uris, deployed=deployed
        )
        if compliance_checks:
            add_compliance_checks(self)
