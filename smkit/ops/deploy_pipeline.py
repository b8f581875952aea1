"""One deploy pipeline: package, synth, deploy, wait, record, with the target deciding each step's detail.

``smkit deploy`` (your account, from your terminal), the release scripts (``scripts/deploy.py`` and
``scripts/rollback.py``: CI, waiting for InService and recording the release in SSM) and
``smkit emulator deploy`` (moto's server, reconciling each stack with its template) run the same steps in
the same order through :func:`run_deploy`; what differs is the :class:`DeployTarget` they pass:

1. **load**: the config is validated and resolved (the image tag applied) before any command runs, so a bad
   file or tag fails first; the target then refuses what it must (:meth:`DeployTarget.check`: a model
   package that is not approved);
2. **package**: the target builds the config's model data (:meth:`DeployTarget.package`);
3. **synth**: when the target reads the assembly before the deploy (stack names, the deployed state), the
   app is synthesized once into the plan's assembly folder; ``cdk bootstrap`` and ``cdk deploy`` then read
   that assembly instead of running the app again, and the app runs a second time only when the deployed
   state adds context (:meth:`DeployTarget.deployed_context`), because that context changes the templates.
   Otherwise ``cdk deploy`` synthesizes and deploys in one call;
4. **deploy**: the pinned CLI (:class:`smkit.ops.cdk_cli.CdkCli`, the target's) deploys, inside
   :meth:`DeployTarget.deploying` (which may pause what the update would refuse and restore it after);
5. **wait and record**: :meth:`DeployTarget.finish` (wait for InService and record the release; reconcile
   with the emulator; nothing more for ``smkit deploy``, whose CLI waits for CloudFormation itself).

With ``dry_run`` the commands are printed, not run; a synth whose assembly a later command needs (the stack
to deploy) still runs, offline.
"""

from __future__ import annotations

import abc
import contextlib
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from smkit.config import load_deployment
from smkit.config.resolved import ResolvedDeployment
from smkit.ops.cdk_cli import AppRun, CdkCli, CdkResult

R = TypeVar("R")


@dataclass(frozen=True)
class DeployPlan:
    """What to deploy: the config, the cloud assembly folder (both relative to ``root``, the folder the CLI
    runs in, unless absolute), the image tag to pin (``-c image_tag=``), extra CDK context (``KEY=VALUE``),
    whether to bootstrap the environments the assembly names first, the CLI's stack concurrency, options
    of the user's own for ``cdk deploy`` (``extra``), and whether to only print the commands."""

    config: Path
    assembly: Path
    root: Path = Path()
    image_tag: str | None = None
    context: Sequence[str] = ()
    bootstrap: bool = False
    concurrency: int | None = None
    extra: Sequence[str] = ()
    dry_run: bool = False

    def at_root(self, path: Path) -> Path:
        """``path`` (the config, the assembly) as this process reads it."""
        return self.root / path

    def app(self, *deployed: str) -> AppRun:
        """The serving app's run of the config into the assembly folder, with the deployed state's context
        (``deployed``, :meth:`DeployTarget.deployed_context`) after the plan's own."""
        return AppRun(self.config, self.assembly, self.image_tag, (*self.context, *deployed))


class DeployTarget(abc.ABC, Generic[R]):
    """Where a deploy goes and what each step does there; every step but :meth:`finish` does nothing by
    default. ``cli`` is the pinned CDK CLI as the target runs it (environment, deploy method, prompts)."""

    #: True when the target reads the deployed state against the synthesized assembly before the deploy
    #: (:meth:`deployed_context`, :meth:`deploying`): the app is then synthesized first.
    reads_assembly: bool = False
    #: True when :meth:`stacks` reads the stack names from the synthesized assembly (then a dry run
    #: synthesizes too, offline).
    names_stacks: bool = False

    def __init__(self, cli: CdkCli) -> None:
        self.cli = cli

    def check(self, deployment: ResolvedDeployment) -> None:
        """Refuse the deployment before any command runs (raise); by default nothing to refuse."""

    def package(self, plan: DeployPlan) -> None:
        """Build the config's model data (or, with ``plan.dry_run``, show how); by default nothing."""

    def stacks(self, assembly: Path) -> Sequence[str]:
        """The stacks to deploy (:attr:`names_stacks`: read from the synthesized ``assembly``, as this
        process reads it); by default every one."""
        return ("--all",)

    def deployed_context(self, deployment: ResolvedDeployment, assembly: Path) -> list[str]:
        """CDK context (``KEY=VALUE``) from what runs now, which changes the templates; by default none."""
        return []

    @contextlib.contextmanager
    def deploying(self, assembly: Path) -> Iterator[None]:
        """Around the deploy of a synthesized assembly; by default nothing."""
        yield

    def show(self, argv: Sequence[str]) -> None:
        """A command of a dry run, printed on stdout."""
        print(shlex.join(argv))

    @abc.abstractmethod
    def finish(self, deployment: ResolvedDeployment, plan: DeployPlan, deployed: CdkResult) -> R:
        """Wait for and record the result of the deploy (``deployed``: the CLI's call); what
        :func:`run_deploy` returns."""


def run_deploy(plan: DeployPlan, target: DeployTarget[R]) -> R | None:
    """Run the pipeline of the module docstring for ``plan`` into ``target``; its result, None for a dry run."""
    deployment = load_deployment(plan.at_root(plan.config), image_tag=plan.image_tag)
    cli = target.cli
    if not plan.dry_run:
        target.check(deployment)
    target.package(plan)
    if not (target.reads_assembly or target.names_stacks or plan.bootstrap):
        # Nothing reads the assembly first: `cdk deploy` synthesizes and deploys in one call.
        deploy = cli.deploy_args(app=plan.app(), concurrency=plan.concurrency, extra=plan.extra)
        if plan.dry_run:
            target.show(cli.argv(deploy))
            return None
        return target.finish(deployment, plan, cli.run(deploy))
    synth = cli.synth_args(plan.app())
    if plan.dry_run and not target.names_stacks:
        target.show(cli.argv(synth))
    else:
        cli.run(synth)
    stacks = target.stacks(plan.at_root(plan.assembly)) if target.names_stacks else ("--all",)
    bootstrap = [cli.bootstrap_args(assembly=plan.assembly)] if plan.bootstrap else []
    deploy = cli.deploy_args(
        stacks=stacks, assembly=plan.assembly, concurrency=plan.concurrency, extra=plan.extra
    )
    if plan.dry_run:
        for args in (*bootstrap, deploy):
            target.show(cli.argv(args))
        return None
    for args in bootstrap:
        cli.run(args)
    assembly = plan.at_root(plan.assembly)
    deployed_state = target.deployed_context(deployment, assembly)
    if deployed_state:
        cli.run(cli.synth_args(plan.app(*deployed_state)))
    with target.deploying(assembly):
        result = cli.run(deploy)
    return target.finish(deployment, plan, result)
