"""Deploy one deployment config with the CDK CLI, wait for InService, record the release.

With an image tag the config's ``build`` or ``ecr`` images become that ECR image (``-c image_tag=``, read by
app.py through smkit/config/overrides.py): the deploy runs exactly the image that was published. The config
is validated with the same override before the CLI starts, so a bad tag fails first.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from botocore.exceptions import ClientError

from smkit.config import ConfigError, load_deployment
from smkit.config.overrides import DEPLOYED_ENDPOINT_CONTEXT, PREVIOUS_S3_CONTEXT
from smkit.config.resolved import ResolvedDeployment
from smkit.model_packages import RegistryError, require_deployable
from smkit.release import cdk, instance_type_change, model_copies
from smkit.release.aws import client, endpoint_name_of, stack_output, wait_in_service
from smkit.release.history import (
    describe_release,
    previous_s3_uris,
    read_releases,
    record_release,
    release_parameter,
)
from smkit.release.shell import ReleaseError, echo, run, run_all
from smkit.release.stage_state import deployed_endpoint


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

    def load(self) -> ResolvedDeployment:
        """The deployment as it will be deployed (image tag applied), validated and resolved."""
        try:
            return load_deployment(self.config, image_tag=self.image_tag)
        except ConfigError as exc:
            raise ReleaseError(str(exc)) from None

    def bootstrap_commands(self) -> list[list[str]]:
        """``cdk bootstrap`` of the environments the synthesized assembly names (nothing without
        ``bootstrap``); run after the synth, so the CLI reads the assembly instead of running the app again."""
        return [cdk.bootstrap_command(self.output)] if self.bootstrap else []

    def synth_command(self, extra: Sequence[str] = ()) -> list[str]:
        """``cdk synth`` of the config into ``output``, with ``extra`` context after the request's own."""
        return cdk.synth_command(
            self.config, image_tag=self.image_tag, context=[*self.context, *extra], output=self.output
        )


def deploy(request: DeployRequest, *, note: str) -> str | None:
    """Every stack of the config; the endpoint name once it is InService (None for a dry run).

    The app is synthesized once, and bootstrap and deploy read that cloud assembly (each CDK app run
    costs seconds of CPU: aws-cdk-lib's start and its template validation). The app runs a second time
    only when the deployed state adds context (releases recorded before, an endpoint already running),
    because that context changes the templates.

    An update that changes an autoscaled variant's instance type runs between :func:`instance_type_change.pause` and
    :func:`instance_type_change.resume` (deregister, update, register again), so the endpoint keeps its name."""
    deployment = request.load()
    commands = [*map(list, request.prepare), request.synth_command(), *request.bootstrap_commands()]
    deploy_synthesized = cdk.deploy_assembly_command(request.output, ["--all"], method=request.method)
    if request.dry_run:
        run_all([*commands, deploy_synthesized], dry_run=True, cwd=request.root)
        return None
    approved_packages(deployment)
    run_all(commands, dry_run=False, cwd=request.root)
    extra = [
        c
        for c in (
            previous_data_context(deployment, request.root / request.output),
            deployed_endpoint_context(request.root / request.output),
        )
        if c
    ]
    if extra:
        run_all([request.synth_command(extra)], dry_run=False, cwd=request.root)
    paused = paused_targets(request.root / request.output)
    try:
        run_all([deploy_synthesized], dry_run=False, cwd=request.root)
    finally:
        if paused:
            restored = instance_type_change.resume(
                paused, sagemaker=client("sagemaker"), autoscaling=client("application-autoscaling")
            )
            echo(f"scalable targets registered again: {', '.join(restored) or 'none'}")
    return finish(
        deployment,
        assembly=request.root / request.output,
        image_tag=request.image_tag,
        note=note,
        timeout_s=request.timeout_s,
    )


def approved_packages(deployment: ResolvedDeployment) -> None:
    """Refuse a model package that is not ``Approved`` in the registry of the deploying account, or whose image
    or data prefix is not the config's (smkit.model_packages); nothing to read when the config names no package."""
    if not any(c.model_data.kind == "model-package" for c in deployment.containers):
        return
    sts = client("sts", deployment.region)
    identity = sts.get_caller_identity()
    partition = identity["Arn"].split(":")[1]
    sagemaker = client("sagemaker", deployment.region)
    try:
        require_deployable(
            deployment,
            sagemaker,
            partition=partition,
            region=deployment.region or sagemaker.meta.region_name,
            account=deployment.account or identity["Account"],
        )
    except RegistryError as exc:
        raise ReleaseError(str(exc)) from None


def previous_data_context(deployment: ResolvedDeployment, assembly: Path) -> str | None:
    """``previous_s3_uris=[...]`` of the recorded releases (None when there are none): the serving stack keeps
    the execution role's read of each (smkit.cdk.serving_stack.ServingStack), so a new S3 prefix does not
    revoke what the old fleet and a rollback read."""
    history = read_releases(release_parameter(deployment.name, deployment.environment))
    if not history:
        return None
    stack = cdk.the_stack_with(assembly, "AWS::SageMaker::Endpoint")
    try:
        bucket = stack_output(stack, "BucketName")
    except ClientError:  # the stack does not exist (yet): every recorded URI is someone else's bucket
        bucket = None
    uris = previous_s3_uris(history, own_bucket=bucket)
    if not uris:
        return None
    echo(f"keeping the execution role's read of {len(uris)} S3 location(s) of recorded releases")
    return f"{PREVIOUS_S3_CONTEXT}={json.dumps(uris, separators=(',', ':'))}"


def deployed_endpoint_context(assembly: Path) -> str | None:
    """``deployed_endpoint={...}``: the name and variant names of the endpoint the serving stack runs now (None
    before the first deploy), so the stack can tell an update that changes variant names
    (smkit.config.day2.plan_update)."""
    stack = cdk.the_stack_with(assembly, "AWS::SageMaker::Endpoint")
    try:
        name = endpoint_name_of(stack)
    except (ClientError, ReleaseError):  # nothing deployed yet
        return None
    deployed = deployed_endpoint(name, client("sagemaker"), client("application-autoscaling"))
    return None if deployed is None else f"{DEPLOYED_ENDPOINT_CONTEXT}={deployed.to_json()}"


def paused_targets(assembly: Path) -> list[instance_type_change.PausedTarget]:
    """Deregister what UpdateEndpoint would refuse for the serving stack of ``assembly`` (see smkit.release.instance_type_change)."""
    stack = cdk.the_stack_with(assembly, "AWS::SageMaker::Endpoint")
    template = cdk.stack_template(assembly, stack)
    paused = instance_type_change.pause(
        template, sagemaker=client("sagemaker"), autoscaling=client("application-autoscaling")
    )
    for p in paused:
        echo(f"deregistered scalable target {p.target['ResourceId']} for the instance-type change")
    return paused


def deploy_repository(request: DeployRequest) -> str | None:
    """Only the config's ECR stack (the repository must exist before the first push); its repository URI.

    The app is synthesized first (offline, also for a dry run) so that the ECR stack's name comes from the
    cloud assembly; that assembly is then deployed as it is.
    """
    request.load()
    run(request.synth_command(), cwd=request.root)
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
    deployment: ResolvedDeployment, *, assembly: Path, image_tag: str | None, note: str, timeout_s: int
) -> str:
    """Wait for the endpoint of the deployed serving stack and append the release to its history."""
    stack = cdk.the_stack_with(assembly, "AWS::SageMaker::Endpoint")
    endpoint = endpoint_name_of(stack)
    wait_in_service(endpoint, timeout_seconds=timeout_s)
    release = describe_release(endpoint, image_tag=image_tag, note=note, region=None)
    parameter = release_parameter(deployment.name, deployment.environment)
    history = record_release(parameter, release)
    echo(f"release {len(history)} recorded in SSM parameter {parameter}")
    bucket = stack_output(stack, "BucketName")
    if bucket:
        in_use = model_copies.live_model_data(client("sagemaker"), endpoint)
        in_use += [c.model_data for r in history for c in r.containers if c.model_data]
        marked = model_copies.mark_superseded(
            client("s3"), bucket, model_copies.kept_prefixes(bucket, in_use)
        )
        echo(
            f"model copies in {bucket}: {len(marked.kept)} in use, {len(marked.superseded)} superseded "
            "(expire by the bucket's SupersededModelCopies rule)"
        )
    return endpoint
