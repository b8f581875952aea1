"""Deploy a deployment config into moto with the real CDK CLI, and destroy it again.

The one substitution: publishing a DockerImageAsset needs a Docker engine, which the emulated deploy does
not assume. A config whose ``image.source`` is ``build`` is deployed as ``image.source: ecr`` with tag
:data:`EMULATED_IMAGE_TAG` in the kit's own ECR repository, which is what CI deploys after it has built and
pushed the image: the deploy passes ``-c image_tag=emulated`` (smkit/config/overrides.py), as CI passes the
tag it published. Everything else in the config, the stacks and the CLI are the real ones. moto does not
check that the image exists. The deploy runs the deploy pipeline (:mod:`smkit.ops.deploy_pipeline`) that
``smkit deploy`` and the release scripts run, into an :class:`EmulatorTarget`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smkit.config import load_deployment
from smkit.config.resolved import ResolvedDeployment
from smkit.emulator.cdk import BOOTSTRAP_STACK, CdkCli, CdkError, CdkResult
from smkit.emulator.client_env import ACCOUNT_ID
from smkit.emulator.inventory import (
    SkippedResource,
    StackResource,
    live_stacks,
    reconcile,
    stack_resources,
)
from smkit.emulator.moto_server import MotoServer
from smkit.model_packages import require_deployable
from smkit.ops.deploy_pipeline import DeployPlan, DeployTarget, run_deploy

EMULATED_IMAGE_TAG = "emulated"


@dataclass(frozen=True)
class DeployedStack:
    """One stack of a deployed app: its template, the resources moto made, what it skipped, its outputs."""

    name: str
    template: dict[str, Any]
    resources: tuple[StackResource, ...]
    skipped: tuple[SkippedResource, ...]
    outputs: dict[str, str]

    def physical_ids(self, resource_type: str) -> list[str]:
        """Physical ids of the created resources of ``resource_type`` (SageMaker: ARNs)."""
        return [r.physical_id for r in self.resources if r.resource_type == resource_type]


@dataclass(frozen=True)
class DeployedApp:
    """A config deployed into moto: where its cloud assembly is and what each stack holds."""

    config: Path
    image_tag: str | None
    assembly: Path
    stacks: tuple[DeployedStack, ...]
    deploy: CdkResult
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def skipped(self) -> list[SkippedResource]:
        """Every template resource moto did not create, over all stacks."""
        return [s for stack in self.stacks for s in stack.skipped]

    def physical_ids(self, resource_type: str) -> list[str]:
        """Physical ids of ``resource_type`` over all stacks."""
        return [pid for stack in self.stacks for pid in stack.physical_ids(resource_type)]


def emulated_image_tag(config: Path) -> str | None:
    """:data:`EMULATED_IMAGE_TAG` when ``config`` has an image a Docker engine would build, else None.

    The config is validated first (``smkit.config.load_deployment``) so that a bad file fails with its own
    message before the CLI starts.
    """
    builds = any(image.source == "build" for image in load_deployment(config).images)
    return EMULATED_IMAGE_TAG if builds else None


def ensure_bootstrapped(server: MotoServer, cli: CdkCli, workdir: Path) -> CdkResult | None:
    """Run ``cdk bootstrap`` unless the emulator already has the CDKToolkit stack."""
    if BOOTSTRAP_STACK in live_stacks(server.client("cloudformation")):
        return None
    # From an empty folder: the CLI bootstraps the named environment without synthesizing an app first.
    return cli.bootstrap([f"aws://{ACCOUNT_ID}/{server.region}"], cwd=workdir / "bootstrap")


def deploy_config(
    server: MotoServer, cli: CdkCli, config: Path, workdir: Path, *, concurrency: int = 1
) -> DeployedApp:
    """Deploy every stack of ``config`` and reconcile each with its template (see ``inventory.reconcile``).

    ``workdir`` receives the cloud assembly (``cdk.out.<config stem>``). A model package the emulator's
    registry does not hold as ``Approved`` (with the config's image and data prefix) is refused first, as
    ``smkit deploy`` refuses it (:func:`smkit.model_packages.require_deployable`).
    """
    image_tag = emulated_image_tag(config)
    assembly = workdir / f"cdk.out.{config.stem}"
    plan = DeployPlan(
        config=config.resolve(), assembly=assembly.resolve(), image_tag=image_tag, concurrency=concurrency
    )
    try:
        deployed = run_deploy(plan, EmulatorTarget(server, cli, config=config, assembly=assembly))
    except CdkError as exc:
        raise CdkError(with_server_traceback(str(exc), server)) from None
    assert deployed is not None, "not a dry run"
    return deployed


class EmulatorTarget(DeployTarget[DeployedApp]):
    """moto's server: a model package its registry does not hold as approved is refused first; the deploy
    synthesizes and deploys in one CLI call; each stack is then reconciled with its template."""

    def __init__(self, server: MotoServer, cli: CdkCli, *, config: Path, assembly: Path) -> None:
        super().__init__(cli)
        self.server, self.config, self.assembly = server, config, assembly

    def check(self, deployment: ResolvedDeployment) -> None:
        require_deployable(
            deployment,
            self.server.client("sagemaker"),
            partition="aws",
            region=deployment.region or self.server.region,
            account=ACCOUNT_ID,
        )

    def finish(self, deployment: ResolvedDeployment, plan: DeployPlan, deployed: CdkResult) -> DeployedApp:
        return DeployedApp(
            config=self.config,
            image_tag=plan.image_tag,
            assembly=self.assembly,
            stacks=deployed_stacks(self.server, self.assembly),
            deploy=deployed,
            timings={"deploy": deployed.seconds},
        )


def with_server_traceback(message: str, server: MotoServer) -> str:
    """``message`` plus moto's last traceback, if its log has one (the cause behind an HTTP 500)."""
    trace = server.last_traceback()
    return f"{message}\nmoto's last traceback ({server.log_path}):\n{trace}" if trace else message


def destroy_app(cli: CdkCli, app: DeployedApp) -> CdkResult:
    """``cdk destroy --all`` the stacks of ``app``, reusing its cloud assembly (no second synth)."""
    return cli.destroy(assembly=app.assembly.resolve())


def destroy_config(cli: CdkCli, config: Path, workdir: Path) -> CdkResult:
    """Destroy the stacks of ``config``: from its cloud assembly under ``workdir`` if a deploy left one,
    otherwise after synthesizing it there."""
    assembly = workdir / f"cdk.out.{config.stem}"
    if not (assembly / "manifest.json").is_file():
        cli.synth(config=config.resolve(), outdir=assembly.resolve(), image_tag=emulated_image_tag(config))
    return cli.destroy(assembly=assembly.resolve())


def assembly_stacks(assembly: Path) -> list[tuple[str, dict[str, Any]]]:
    """(stack name, template) for every CloudFormation stack in a cloud assembly directory."""
    manifest = json.loads((assembly / "manifest.json").read_text(encoding="utf-8"))
    stacks: list[tuple[str, dict[str, Any]]] = []
    for artifact_id, artifact in manifest.get("artifacts", {}).items():
        if artifact.get("type") != "aws:cloudformation:stack":
            continue
        properties = artifact.get("properties", {})
        template = json.loads((assembly / properties["templateFile"]).read_text(encoding="utf-8"))
        stacks.append((properties.get("stackName", artifact_id), template))
    return stacks


def deployed_stacks(server: MotoServer, assembly: Path) -> tuple[DeployedStack, ...]:
    """Every stack of ``assembly`` as deployed in ``server``, reconciled with its template."""
    cloudformation = server.client("cloudformation")
    return tuple(
        _deployed_stack(cloudformation, name, template) for name, template in assembly_stacks(assembly)
    )


def _deployed_stack(cloudformation: Any, name: str, template: dict[str, Any]) -> DeployedStack:
    resources = stack_resources(cloudformation, name)
    described = cloudformation.describe_stacks(StackName=name)["Stacks"][0]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])}
    return DeployedStack(
        name=name,
        template=template,
        resources=tuple(resources),
        skipped=tuple(reconcile(name, template, resources)),
        outputs=outputs,
    )
