"""CDK Pipelines: source -> gates + synth -> staging (+ smoke test) -> manual approval -> production.

Selected with ``cdk synth -c config=config/<name>.yaml -c pipeline=true``; the config's ``pipeline:`` section
names the source repository, the tooling account that runs the pipeline, and the staging and production
accounts/regions. Each stage is a :class:`smkit.cdk.serving_stage.ServingStage` of the same config (environment
``staging`` / ``prod``), so what the pipeline deploys is what its synth step synthesized and checked.

Cross-account trust: staging and production are bootstrapped once with
``cdk bootstrap aws://ACCOUNT/REGION --trust TOOLING_ACCOUNT --cloudformation-execution-policies ARN``; the
pipeline then assumes the bootstrap deploy roles (``cross_account_keys=True`` encrypts the artifact bucket
with a KMS key those roles may use). The post-deploy smoke test runs in the tooling account and assumes a
role of the staging stage that may only invoke the staged endpoint (:class:`SmokeTestAccessStack`).

What the CodeBuild steps run is the caller's: :class:`PipelineStack` takes its install, synth and smoke-test
commands as props. :meth:`PipelineCommands.for_project` is the default for a project made by ``smkit init``
(the ``smkit`` CLI only: no Makefile, no scripts/); a repository with gates of its own passes those.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_codecommit as codecommit
from aws_cdk import aws_codepipeline as codepipeline
from aws_cdk import aws_iam as iam
from aws_cdk import pipelines
from constructs import Construct

from smkit.aws.cdk_bootstrap import lookup_role_arn
from smkit.cdk.constructs.acknowledge import acknowledge
from smkit.cdk.constructs.logical_ids import pascal
from smkit.cdk.pipeline_parts import (
    INLINE_POLICIES,
    INLINE_POLICY_RULES,
    PIPELINE_REASONS,
    REPLICATION_BUCKET_REASONS,
    PipelineArtifacts,
    SmokeTestAccessStack,
    join_as_sub,
    wildcard_reasons,
)
from smkit.cdk.serving_stage import ServingStage
from smkit.config.day2 import DeployedEndpoint, pipeline_refusal
from smkit.config.model_data_rules import package_arn
from smkit.config.pipeline import PipelineSpec, StageTarget
from smkit.config.resolved import ResolvedDeployment

# CodeBuild's standard image with Python 3.11 and Node.js 20 (the versions smkit and the CDK CLI need).
# https://docs.aws.amazon.com/codebuild/latest/userguide/available-runtimes.html
BUILD_IMAGE = codebuild.LinuxBuildImage.STANDARD_7_0
RUNTIME_VERSIONS = {"python": "3.11", "nodejs": "20"}
# The profile the default smoke test assumes the staging role with: CodeBuild's own (container) credentials
# call sts:AssumeRole. https://docs.aws.amazon.com/sdkref/latest/guide/feature-assume-role-credentials.html
SMOKE_TEST_PROFILE = "smkit-smoke-test"
# The asset publisher CDK Pipelines installs in its Assets stage (default: the npm `latest` tag).
CDK_ASSETS_VERSION = "4.7.3"
ASSEMBLY_DIR = "cdk.out"


def cdk_cli_version(package_json: Path) -> str:
    """The ``aws-cdk`` CLI version pinned in package.json (the npm ``latest`` tag is wrong, docs/toolchain.md)."""
    data = json.loads(package_json.read_text(encoding="utf-8"))
    version = {**data.get("dependencies", {}), **data.get("devDependencies", {})}.get("aws-cdk")
    if not version or not version[0].isdigit():
        raise ValueError(
            f"{package_json}: devDependencies.aws-cdk must pin an exact version, got {version!r}"
        )
    return str(version)


@dataclass(frozen=True)
class PipelineCommands:
    """The shell lines the pipeline's CodeBuild steps run, from the repository root, in order.

    ``install`` runs in the install phase of the synth and smoke-test steps; ``synth`` must leave the cloud
    assembly of ``-c pipeline=true`` in ``cdk.out``; ``smoke_test`` runs after the staging deploy with
    ``ENDPOINT_NAME``, ``ENDPOINT_REGION`` and ``SMOKE_TEST_ROLE_ARN`` set (the role it may assume to invoke
    the staged endpoint). ``cli`` is how a step calls the smkit CLI that ``install`` installed (``smkit
    approved`` before each stage of a config that deploys model packages, smkit.model_packages).
    https://docs.aws.amazon.com/cdk/api/v2/python/aws_cdk.pipelines/CodeBuildStep.html
    """

    install: tuple[str, ...]
    synth: tuple[str, ...]
    smoke_test: tuple[str, ...]
    cli: str = "smkit"

    @classmethod
    def for_project(cls, config_file: str, *, smkit_version: str | None = None) -> PipelineCommands:
        """The commands of a project made by ``smkit init``: the smkit CLI of ``smkit_version`` (default:
        the installed one) from PyPI, ``smkit synth --read-stages`` of the config (it reads what each stage
        runs now and plans each stage's update from it, smkit.release.stage_state), ``smkit smoke-test`` of
        its samples."""
        from smkit import __version__

        return cls(
            install=(f'pip install "smkit[cdk]=={smkit_version or __version__}"',),
            synth=(
                f"smkit synth --config {config_file} --output {ASSEMBLY_DIR} -c pipeline=true --read-stages",
            ),
            smoke_test=(
                f'aws configure set profile.{SMOKE_TEST_PROFILE}.role_arn "$SMOKE_TEST_ROLE_ARN"',
                f"aws configure set profile.{SMOKE_TEST_PROFILE}.credential_source EcsContainer",
                f"AWS_PROFILE={SMOKE_TEST_PROFILE} smkit smoke-test --config {config_file}"
                ' --endpoint "$ENDPOINT_NAME" --region "$ENDPOINT_REGION"',
            ),
        )


def add_pipeline(
    app: cdk.App,
    *,
    deployment: ResolvedDeployment,
    config_path: Path,
    cli_version: str,
    project_root: Path,
    commands: PipelineCommands | Callable[[str], PipelineCommands] | None = None,
    deployed: Mapping[str, DeployedEndpoint] | None = None,
    previous_s3_uris: Sequence[str] = (),
) -> PipelineStack:
    """Add the pipeline stack of ``deployment`` to ``app`` (what ``-c pipeline=true`` selects in app.py).

    ``config_path`` is the file ``deployment`` was loaded from; ``commands`` are the steps' commands, or a
    function of the config file (relative to ``project_root``) returning them; default
    :meth:`PipelineCommands.for_project`. ``deployed``: the endpoint each stage (``staging``, ``prod``) runs now,
    as recorded; each stage's update is planned as ``smkit deploy`` plans it (smkit.config.day2), and one the
    pipeline cannot deploy is refused naming the procedure. ``previous_s3_uris``: S3 data of recorded releases
    the stages' execution roles keep reading.
    """
    inside = config_path.is_relative_to(project_root)
    config_file = (config_path.relative_to(project_root) if inside else config_path).as_posix()
    if not isinstance(commands, PipelineCommands):
        commands = (commands or PipelineCommands.for_project)(config_file)
    return PipelineStack(
        app,
        f"{pascal(deployment.name)}Pipeline",
        deployment=deployment,
        config_file=config_file,
        install_commands=commands.install,
        synth_commands=commands.synth,
        smoke_test_commands=commands.smoke_test,
        cli_version=cli_version,
        deployed=deployed or {},
        previous_s3_uris=previous_s3_uris,
        smkit_cli=commands.cli,
    )


class PipelineStack(cdk.Stack):
    """The self-mutating delivery pipeline of one deployment config (runs in the tooling account).

    :param deployment: the resolved deployment; its ``pipeline`` section names the source and the accounts.
    :param config_file: the config's path as the commands name it (relative to the repository root).
    :param install_commands: the install phase of the synth and smoke-test steps (e.g. ``pip install ...``).
    :param synth_commands: the synth step's build phase; it must leave the ``-c pipeline=true`` cloud
        assembly in ``cdk.out`` (e.g. ``smkit synth --config FILE --output cdk.out -c pipeline=true``).
    :param smoke_test_commands: run after the staging deploy with ``ENDPOINT_NAME``, ``ENDPOINT_REGION`` and
        ``SMOKE_TEST_ROLE_ARN`` (the staging role that may invoke the endpoint) in the environment.
    :param cli_version: the AWS CDK CLI version the self-mutation runs (pin it, :func:`cdk_cli_version`).
    :param deployed: the endpoint each stage (``staging``, ``prod``) runs now, as recorded: a renamed variant
        is deployed without DeploymentConfig (as ``smkit deploy`` does), an instance-type change of an
        autoscaled variant is refused (ValueError naming the procedure, :func:`smkit.config.day2.pipeline_refusal`).
    :param previous_s3_uris: S3 data of recorded releases the stages' execution roles keep reading.
    :param smkit_cli: how the steps call the smkit CLI (``smkit approved`` before each stage when the model
        names model packages).

    :class:`PipelineCommands` ``.for_project(config_file)`` gives the commands of a project made by
    ``smkit init``.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        deployment: ResolvedDeployment,
        config_file: str,
        install_commands: Sequence[str],
        synth_commands: Sequence[str],
        smoke_test_commands: Sequence[str],
        cli_version: str,
        deployed: Mapping[str, DeployedEndpoint] | None = None,
        previous_s3_uris: Sequence[str] = (),
        smkit_cli: str = "smkit",
        **kwargs: Any,
    ) -> None:
        self._deployed = dict(deployed or {})
        self._previous_s3_uris = tuple(previous_s3_uris)
        self._config_file = config_file
        _check_arguments(self._deployed, config_file, install_commands, synth_commands, smoke_test_commands)
        spec = deployment.pipeline
        if spec is None:
            raise ValueError(
                f"{config_file}: pipeline: section is missing; -c pipeline=true needs pipeline.source, "
                "pipeline.account/region, pipeline.staging and pipeline.production (see README, CI/CD)"
            )
        super().__init__(scope, id_, env=cdk.Environment(account=spec.account, region=spec.region), **kwargs)
        self.source = self._source(spec)
        self.artifacts = PipelineArtifacts(
            self, "Artifacts", log_retention_days=deployment.monitoring.log_retention_days
        )
        self.synth = pipelines.CodeBuildStep(
            "Synth",
            input=self.source,
            install_commands=list(install_commands),
            commands=list(synth_commands),
            primary_output_directory=ASSEMBLY_DIR,
            # What each stage runs now is read through the stage's CDK lookup role before the final synth
            # (smkit synth --read-stages, smkit.release.stage_state).
            role_policy_statements=[
                iam.PolicyStatement(
                    actions=["sts:AssumeRole"],
                    resources=[lookup_role_arn(t.account, t.region) for t in (spec.staging, spec.production)],
                )
            ],
        )
        self.pipeline = self._code_pipeline(cli_version)

        self._add_staging(deployment, spec, install_commands, smoke_test_commands, smkit_cli)

        self._add_production(deployment, spec, install_commands, smkit_cli)
        self.pipeline.build_pipeline()
        self._tidy_template()
        self._acknowledge()

    def _code_pipeline(self, cli_version: str) -> pipelines.CodePipeline:
        """The CDK pipeline: V2, cross-account keys rotated, artifacts and build logs in this stack's bucket
        and log group, CodeBuild on :data:`BUILD_IMAGE`."""
        return pipelines.CodePipeline(
            self,
            "Pipeline",
            synth=self.synth,
            cli_version=cli_version,
            cdk_assets_cli_version=CDK_ASSETS_VERSION,
            pipeline_type=codepipeline.PipelineType.V2,
            artifact_bucket=self.artifacts.bucket,
            cross_account_keys=True,
            enable_key_rotation=True,
            docker_enabled_for_synth=False,
            code_build_defaults=pipelines.CodeBuildOptions(
                build_environment=codebuild.BuildEnvironment(build_image=BUILD_IMAGE),
                partial_build_spec=codebuild.BuildSpec.from_object(
                    {"phases": {"install": {"runtime-versions": RUNTIME_VERSIONS}}}
                ),
                logging=codebuild.LoggingOptions(
                    cloud_watch=codebuild.CloudWatchLoggingOptions(log_group=self.artifacts.build_logs)
                ),
            ),
            # Image assets without BuildKit's provenance attestation: with it the push is an OCI image index,
            # which SageMaker CreateModel rejects. https://docs.docker.com/build/building/variables/
            asset_publishing_code_build_defaults=pipelines.CodeBuildOptions(
                build_environment=codebuild.BuildEnvironment(
                    environment_variables={
                        "BUILDX_NO_DEFAULT_ATTESTATIONS": codebuild.BuildEnvironmentVariable(value="1")
                    }
                )
            ),
        )

    def _add_staging(
        self,
        deployment: ResolvedDeployment,
        spec: PipelineSpec,
        install_commands: Sequence[str],
        smoke_test_commands: Sequence[str],
        smkit_cli: str,
    ) -> None:
        """The staging stage: the model-package check before it, the smoke test after it (run by a role of
        this account that only the staging account's SmokeTestRole trusts)."""
        self.staging = self._stage("Staging", deployment, "staging", spec.staging)
        serving = self.staging.stacks.serving
        # The smoke test's CodeBuild role, named at synth time so the staging role can trust exactly it.
        runner_name = f"{self.stack_name}-smoke-test"[:64]
        self.smoke_test_runner = iam.Role(
            self,
            "SmokeTestRunner",
            assumed_by=iam.ServicePrincipal("codebuild.amazonaws.com"),
            role_name=runner_name,
            description="Runs the post-deploy smoke test; the only principal the staging SmokeTestRole trusts",
        )
        access = SmokeTestAccessStack(
            self.staging,
            "SmokeTestAccess",
            deployment=deployment.name,
            environment="staging",
            trusted_account=spec.account,
            trusted_role_arn=f"arn:{self.partition}:iam::{spec.account}:role/{runner_name}",
            env=cdk.Environment(account=spec.staging.account, region=spec.staging.region),
        )
        endpoint_output = serving.node.find_child("EndpointName")
        assert isinstance(endpoint_output, cdk.CfnOutput)
        self.endpoint_output = endpoint_output
        self.smoke_test = pipelines.CodeBuildStep(
            "SmokeTest",
            role=self.smoke_test_runner,
            input=self.source,
            install_commands=list(install_commands),
            commands=list(smoke_test_commands),
            env={"ENDPOINT_REGION": spec.staging.region},
            env_from_cfn_outputs={
                "ENDPOINT_NAME": endpoint_output,
                "SMOKE_TEST_ROLE_ARN": access.role_arn_output,
            },
            role_policy_statements=[
                iam.PolicyStatement(actions=["sts:AssumeRole"], resources=[access.role.role_arn])
            ],
        )
        self.package_checks: list[pipelines.CodeBuildStep] = []
        staging_check = self._package_check(
            "Staging",
            deployment,
            f"{smkit_cli} approved --config {self._config_file}",
            install_commands,
            spec.staging,
        )
        self.pipeline.add_stage(
            self.staging, pre=[staging_check] if staging_check else None, post=[self.smoke_test]
        )

    def _add_production(
        self,
        deployment: ResolvedDeployment,
        spec: PipelineSpec,
        install_commands: Sequence[str],
        smkit_cli: str,
    ) -> None:
        """The production stage, after a manual approval (and then the model-package check)."""
        self.production = self._stage("Production", deployment, "prod", spec.production)
        self.approval = pipelines.ManualApprovalStep(
            "PromoteToProduction",
            comment=f"Staging endpoint of {deployment.name} passed its smoke test. Promote to production?",
        )
        production_check = self._package_check(
            "Production",
            deployment,
            f"{smkit_cli} approved --config {self._config_file}",
            install_commands,
            spec.production,
        )
        if production_check is not None:  # after the approval: the version's status when it is promoted
            production_check.add_step_dependency(self.approval)
        self.pipeline.add_stage(
            self.production, pre=[self.approval, *([production_check] if production_check else [])]
        )

    def _source(self, spec: PipelineSpec) -> pipelines.CodePipelineSource:
        source = spec.source
        if source.type == "connection":
            return pipelines.CodePipelineSource.connection(
                source.repository, source.branch, connection_arn=source.connection_arn
            )
        repository = codecommit.Repository.from_repository_name(self, "SourceRepository", source.repository)
        return pipelines.CodePipelineSource.code_commit(repository, source.branch)

    def _stage(
        self, id_: str, deployment: ResolvedDeployment, environment: str, target: StageTarget
    ) -> ServingStage:
        staged = dataclasses.replace(
            deployment, environment=environment, account=target.account, region=target.region
        )
        stage = ServingStage(
            self,
            id_,
            deployment=staged,
            env=cdk.Environment(account=target.account, region=target.region),
            previous_s3_uris=self._previous_s3_uris,
            deployed=self._deployed.get(environment),
        )
        refusal = pipeline_refusal(stage.stacks.serving.update_plan, environment, self._config_file)
        if refusal:
            raise ValueError(refusal)
        return stage

    def _package_check(
        self,
        id_: str,
        deployment: ResolvedDeployment,
        command: str,
        install_commands: Sequence[str],
        target: StageTarget,
    ) -> pipelines.CodeBuildStep | None:
        """``command`` (``smkit approved --config FILE``) before a stage whose model names model packages (None
        when it names none): the stage deploys only Approved versions, as ``smkit deploy`` does
        (smkit.model_packages). The step's role may describe exactly those versions (a registry of another account grants it in its group's resource
        policy: https://docs.aws.amazon.com/sagemaker/latest/dg/model-registry-ram.html)."""
        packages = [c.model_data.package for c in deployment.containers if c.model_data.package]
        if not packages:
            return None
        arns = [
            package_arn(p, partition=self.partition, region=target.region, account=target.account)
            for p in packages
        ]
        step = pipelines.CodeBuildStep(
            f"ModelPackageApproved{id_}",
            input=self.source,
            install_commands=list(install_commands),
            commands=[f"{command} --account {target.account} --region {target.region}"],
            role_policy_statements=[
                iam.PolicyStatement(actions=["sagemaker:DescribeModelPackage"], resources=arns)
            ],
        )
        self.package_checks.append(step)
        return step

    def _tidy_template(self) -> None:
        """Two cfn-lint findings on CDK Pipelines' output, fixed rather than ignored.

        E3703: action role ARNs come as ``Fn::Join`` with an empty delimiter; written as ``Fn::Sub``.
        W3005: the pipeline lists its role in DependsOn although it already references it (GetAtt).
        """
        resource = self.pipeline.pipeline.node.default_child
        assert isinstance(resource, codepipeline.CfnPipeline)
        # Resolved here the stages carry the L1 (camelCase) property names.
        stages = self.resolve(resource.stages)
        for i, stage in enumerate(stages):
            for j, action in enumerate(stage.get("actions", [])):
                for key, value in (action.get("configuration") or {}).items():
                    sub = join_as_sub(value)
                    if sub is not None:
                        resource.add_property_override(f"Stages.{i}.Actions.{j}.Configuration.{key}", sub)
        policy = self.pipeline.pipeline.role.node.find_child("DefaultPolicy").node.default_child
        assert isinstance(policy, iam.CfnPolicy)
        resource.add_override("DependsOn", [policy.logical_id])

    def _acknowledge(self) -> None:
        """Findings on what CDK Pipelines generates, each with the reason it is accepted."""
        for policy in self.node.find_all():
            # The staged serving stacks acknowledge their own findings (smkit/cdk/serving_stack.py).
            if isinstance(policy, iam.CfnPolicy) and cdk.Stack.of(policy) is self:
                reasons = wildcard_reasons(policy)
                reasons |= {rule: INLINE_POLICIES for rule in INLINE_POLICY_RULES}
                acknowledge(policy, reasons)
        acknowledge(self, PIPELINE_REASONS)
        support = self.node.root.node.try_find_child(
            f"cross-region-stack-{self.account}:{self.production.region}"
        )
        if support is not None:
            acknowledge(support, REPLICATION_BUCKET_REASONS)


def _check_arguments(
    deployed: Mapping[str, DeployedEndpoint],
    config_file: str,
    install_commands: Sequence[str],
    synth_commands: Sequence[str],
    smoke_test_commands: Sequence[str],
) -> None:
    """Refuse stages other than staging and prod, and commands that are not non-empty lists of lines."""
    unknown = sorted(set(deployed) - {"staging", "prod"})
    if unknown:
        raise ValueError(
            f"deployed endpoints of stages {', '.join(unknown)}: the pipeline's stages are staging and prod"
        )
    for name, given in (
        ("install_commands", install_commands),
        ("synth_commands", synth_commands),
        ("smoke_test_commands", smoke_test_commands),
    ):
        if isinstance(given, str) or not given or not all(isinstance(c, str) and c.strip() for c in given):
            raise ValueError(
                f"PipelineStack {name}={given!r}: give a non-empty list of shell lines, "
                f"e.g. PipelineCommands.for_project({config_file!r}).{name.removesuffix('_commands')}"
            )
