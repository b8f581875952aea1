"""Deploy one deployment config with the CDK CLI, wait for InService, record the release.

With an image tag the config's ``build`` or ``ecr`` images become that ECR image (``-c image_tag=``, read by
app.py through smkit/config/overrides.py): the deploy runs exactly the image that was published. The config
is validated with the same override before the CLI starts, so a bad tag fails first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from smkit.config import ConfigError, DeploymentConfig, load_config
from smkit.release import cdk
from smkit.release.aws import endpoint_name_of, stack_output, wait_in_service
from smkit.release.records import describe_release, record_release, release_parameter
from smkit.release.shell import ReleaseError, echo, run, run_all


@dataclass(frozen=True)
class DeployRequest:
    """One deploy: the config, the image tag to pin, and how to run the CLI.

    ``root``: the project root the CLI runs in (its cdk.json); ``output``: the cloud assembly directory,
    relative to ``root``; ``prepare``: commands run first (packaging the model archives).
    """

    config: Path
    root: Path
    image_tag: str | None = None
    context: Sequence[str] = ()
    output: str = cdk.ASSEMBLY_DIR
    method: str = "change-set"
    bootstrap: bool = False
    prepare: Sequence[Sequence[str]] = field(default_factory=tuple)
    timeout_s: int = 3600
    dry_run: bool = False

    def load(self) -> DeploymentConfig:
        """The config as it will be deployed (image tag applied), validated."""
        try:
            return load_config(self.config, image_tag=self.image_tag)
        except ConfigError as exc:
            raise ReleaseError(str(exc)) from None

    def bootstrap_commands(self) -> list[list[str]]:
        if not self.bootstrap:
            return []
        return [
            cdk.bootstrap_command(
                self.config, image_tag=self.image_tag, context=self.context, output=self.output
            )
        ]


def deploy(request: DeployRequest, *, note: str) -> str | None:
    """Every stack of the config; the endpoint name once it is InService (None for a dry run)."""
    config = request.load()
    commands = [*map(list, request.prepare), *request.bootstrap_commands()]
    commands.append(
        cdk.deploy_command(
            request.config,
            image_tag=request.image_tag,
            context=request.context,
            output=request.output,
            method=request.method,
        )
    )
    if not run_all(commands, dry_run=request.dry_run, cwd=request.root):
        return None
    return finish(
        config,
        assembly=request.root / request.output,
        image_tag=request.image_tag,
        note=note,
        timeout_s=request.timeout_s,
    )


def deploy_repository(request: DeployRequest) -> str | None:
    """Only the config's ECR stack (the repository must exist before the first push); its repository URI.

    The app is synthesized first (offline, also for a dry run) so that the ECR stack's name comes from the
    cloud assembly; that assembly is then deployed as it is.
    """
    request.load()
    run(
        cdk.synth_command(
            request.config, image_tag=request.image_tag, context=request.context, output=request.output
        ),
        cwd=request.root,
    )
    stack = cdk.the_stack_with(request.root / request.output, "AWS::ECR::Repository")
    commands = [
        *request.bootstrap_commands(),
        cdk.deploy_assembly_command(request.output, [stack], method=request.method),
    ]
    if not run_all(commands, dry_run=request.dry_run, cwd=request.root):
        return None
    uri = stack_output(stack, "RepositoryUri")
    if not uri:
        raise ReleaseError(f"stack {stack!r} has no RepositoryUri output")
    return uri


def finish(
    config: DeploymentConfig, *, assembly: Path, image_tag: str | None, note: str, timeout_s: int
) -> str:
    """Wait for the endpoint of the deployed serving stack and append the release to its history."""
    stack = cdk.the_stack_with(assembly, "AWS::SageMaker::Endpoint")
    endpoint = endpoint_name_of(stack)
    wait_in_service(endpoint, timeout_seconds=timeout_s)
    release = describe_release(endpoint, image_tag=image_tag, note=note, region=None)
    parameter = release_parameter(config.name, config.environment)
    history = record_release(parameter, release)
    echo(f"release {len(history)} recorded in SSM parameter {parameter}")
    return endpoint
