"""Deploy one deployment config with the CDK CLI, wait for InService, record the release.

The steps are the deploy pipeline's (:mod:`smkit.ops.deploy_pipeline`), the one ``smkit deploy`` and
``smkit emulator deploy`` run too; :class:`ReleaseTarget` is what a release does at each of them.

With an image tag the config's ``build`` or ``ecr`` images become that ECR image (``-c image_tag=``, read by
app.py through smkit/config/overrides.py): the deploy runs exactly the image that was published. The config
is validated with the same override before the CLI starts, so a bad tag fails first.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from botocore.exceptions import ClientError

from smkit.config import ConfigError
from smkit.config.overrides import DEPLOYED_ENDPOINT_CONTEXT, PREVIOUS_S3_CONTEXT
from smkit.config.resolved import ResolvedDeployment
from smkit.model_packages import RegistryError, require_deployable
from smkit.ops.cdk_cli import CdkCli, CdkError, CdkResult
from smkit.ops.deploy_pipeline import DeployPlan, DeployTarget, run_deploy
from smkit.release import instance_type_change, model_copies
from smkit.release.assembly import ASSEMBLY_DIR, stack_template, the_stack_with
from smkit.release.aws import client, endpoint_name_of, stack_output, wait_in_service
from smkit.release.history import (
    describe_release,
    previous_s3_uris,
    read_releases,
    record_release,
    release_parameter,
)
from smkit.release.shell import ReleaseError, echo, run_all
from smkit.release.stage_state import deployed_endpoint

T = TypeVar("T")


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
    output: str = ASSEMBLY_DIR
    method: str = "change-set"
    bootstrap: bool = False
    prepare: Sequence[Sequence[str]] = field(default_factory=tuple)
    timeout_s: int = 3600
    dry_run: bool = False

    @property
    def cli(self) -> CdkCli:
        """The pinned CDK CLI of the project root: unattended, with the request's deploy method, each
        command echoed before it runs (on stderr) and its output streamed."""
        return CdkCli(root=self.root, stream=True, method=self.method, echo=echo)

    def plan(self, config: Path | None = None, *, image_tag: str | None = None) -> DeployPlan:
        """The pipeline's plan (:mod:`smkit.ops.deploy_pipeline`) for the request's config (or ``config``)."""
        return DeployPlan(
            config=config or self.config,
            assembly=Path(self.output),
            root=self.root,
            image_tag=image_tag if config else self.image_tag,
            context=tuple(self.context),
            bootstrap=self.bootstrap if config is None else False,
            dry_run=self.dry_run,
        )


class ReleaseTarget(DeployTarget[str]):
    """A release into the account of the credentials: refuse an unapproved model package, package, keep
    the deployed state (recorded S3 reads, the running endpoint's variants) as context, pause what an
    instance-type change would refuse, wait for InService and record the release."""

    reads_assembly = True

    def __init__(self, request: DeployRequest, *, note: str) -> None:
        super().__init__(request.cli)
        self.request, self.note = request, note

    def check(self, deployment: ResolvedDeployment) -> None:
        approved_packages(deployment)

    def package(self, plan: DeployPlan) -> None:
        run_all(self.request.prepare, dry_run=plan.dry_run, cwd=self.request.root)

    def deployed_context(self, deployment: ResolvedDeployment, assembly: Path) -> list[str]:
        found = (previous_data_context(deployment, assembly), deployed_endpoint_context(assembly))
        return [c for c in found if c]

    @contextlib.contextmanager
    def deploying(self, assembly: Path) -> Iterator[None]:
        """An update that changes an autoscaled variant's instance type runs between :func:`instance_type_change.pause`
        and :func:`instance_type_change.resume` (deregister, update, register again), so the endpoint keeps its name."""
        paused = paused_targets(assembly)
        try:
            yield
        finally:
            if paused:
                restored = instance_type_change.resume(
                    paused, sagemaker=client("sagemaker"), autoscaling=client("application-autoscaling")
                )
                echo(f"scalable targets registered again: {', '.join(restored) or 'none'}")

    def finish(self, deployment: ResolvedDeployment, plan: DeployPlan, deployed: CdkResult) -> str:
        return finish(
            deployment,
            assembly=plan.at_root(plan.assembly),
            image_tag=plan.image_tag,
            note=self.note,
            timeout_s=self.request.timeout_s,
        )


class RepositoryTarget(DeployTarget[str]):
    """Only the config's ECR stack (the repository must exist before the first push), named by the
    synthesized assembly; the result is its repository URI."""

    names_stacks = True

    def __init__(self, request: DeployRequest) -> None:
        super().__init__(request.cli)
        self.stack = ""

    def stacks(self, assembly: Path) -> list[str]:
        self.stack = the_stack_with(assembly, "AWS::ECR::Repository")
        return [self.stack]

    def finish(self, deployment: ResolvedDeployment, plan: DeployPlan, deployed: CdkResult) -> str:
        uri = stack_output(self.stack, "RepositoryUri")
        if not uri:
            raise ReleaseError(f"stack {self.stack!r} has no RepositoryUri output")
        return uri


def released(run: Callable[[], T]) -> T:
    """``run()``, with a bad config and a failed CLI call as :class:`ReleaseError` (what the scripts print)."""
    try:
        return run()
    except ConfigError as exc:
        raise ReleaseError(str(exc)) from None
    except CdkError as exc:
        raise ReleaseError(str(exc)) from None


def deploy(request: DeployRequest, *, note: str) -> str | None:
    """Every stack of the config through the deploy pipeline (:mod:`smkit.ops.deploy_pipeline`) into a
    :class:`ReleaseTarget`; the endpoint name once it is InService (None for a dry run)."""
    return released(lambda: run_deploy(request.plan(), ReleaseTarget(request, note=note)))


def deploy_repository(request: DeployRequest) -> str | None:
    """Only the config's ECR stack (:class:`RepositoryTarget`); its repository URI (None for a dry run, which
    still synthesizes, offline, to name the stack)."""
    return released(lambda: run_deploy(request.plan(), RepositoryTarget(request)))


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
    stack = the_stack_with(assembly, "AWS::SageMaker::Endpoint")
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
    stack = the_stack_with(assembly, "AWS::SageMaker::Endpoint")
    try:
        name = endpoint_name_of(stack)
    except (ClientError, ReleaseError):  # nothing deployed yet
        return None
    deployed = deployed_endpoint(name, client("sagemaker"), client("application-autoscaling"))
    return None if deployed is None else f"{DEPLOYED_ENDPOINT_CONTEXT}={deployed.to_json()}"


def paused_targets(assembly: Path) -> list[instance_type_change.PausedTarget]:
    """Deregister what UpdateEndpoint would refuse for the serving stack of ``assembly`` (see smkit.release.instance_type_change)."""
    stack = the_stack_with(assembly, "AWS::SageMaker::Endpoint")
    template = stack_template(assembly, stack)
    paused = instance_type_change.pause(
        template, sagemaker=client("sagemaker"), autoscaling=client("application-autoscaling")
    )
    for p in paused:
        echo(f"deregistered scalable target {p.target['ResourceId']} for the instance-type change")
    return paused


def finish(
    deployment: ResolvedDeployment, *, assembly: Path, image_tag: str | None, note: str, timeout_s: int
) -> str:
    """Wait for the endpoint of the deployed serving stack and append the release to its history."""
    stack = the_stack_with(assembly, "AWS::SageMaker::Endpoint")
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
