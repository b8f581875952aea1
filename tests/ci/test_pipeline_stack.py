"""The CDK Pipelines stack: stage order, approval before production, this repository's gates as its synth
commands, smoke test wired to the staged endpoint's output, and the same cfn-lint / cdk-nag gates as the
serving stacks. In a project made by ``smkit init`` (no Makefile, no scripts/) the same stack runs the smkit CLI.
"""

from __future__ import annotations

import copy
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from built_once import built_once, mark_built

from scripts.gates import gate_commands, pipeline_smoke_test_commands, pipeline_synth_commands
from smkit.config import ConfigError, parse_config

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
CONFIG_FILE = "config/realtime.yaml"
STACK = "TabularRealtimePipeline"


@dataclass(frozen=True)
class Synthesized:
    outdir: Path
    template: dict[str, Any]

    def resources(self, kind: str) -> dict[str, dict[str, Any]]:
        return {k: r for k, r in self.template["Resources"].items() if r["Type"] == kind}

    @property
    def stages(self) -> list[dict[str, Any]]:
        (pipeline,) = self.resources("AWS::CodePipeline::Pipeline").values()
        stages: list[dict[str, Any]] = pipeline["Properties"]["Stages"]
        return stages

    def stage(self, name: str) -> dict[str, Any]:
        return next(s for s in self.stages if s["Name"] == name)

    def buildspec(self, project_ref: dict[str, str]) -> dict[str, Any]:
        project = self.template["Resources"][project_ref["Ref"]]
        spec: dict[str, Any] = json.loads(project["Properties"]["Source"]["BuildSpec"])
        return spec


SYNTH_SCRIPT = """
import json, sys
from pathlib import Path
import aws_cdk as cdk
from smkit.config import load_deployment
from smkit.cdk.compliance import add_compliance_checks
from smkit.cdk import FEATURE_FLAGS
from smkit.cdk.pipeline_stack import add_pipeline, cdk_cli_version
from stacks.app import pipeline_commands
root = Path.cwd()
context = {**FEATURE_FLAGS, **json.loads((root / "cdk.json").read_text())["context"]}
app = cdk.App(outdir=sys.argv[1], context=context)
config_path = root / sys.argv[2]
add_pipeline(app, deployment=load_deployment(config_path), config_path=config_path,
             cli_version=cdk_cli_version(root / "package.json"), project_root=root,
             commands=pipeline_commands)
add_compliance_checks(app)
app.synth()
"""


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """The pipeline app of config/realtime.yaml, synthesized once (cdk-nag runs as part of synth)."""
    with built_once(tmp_path_factory, "pipeline") as (shared, built):
        outdir = shared / "cdk.out"
        if not built:
            done = subprocess.run(
                [sys.executable, "-c", SYNTH_SCRIPT, str(outdir), CONFIG_FILE],
                cwd=REPO,
                capture_output=True,
                text=True,
                check=False,
                env={**os.environ, "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"},
            )
            assert done.returncode == 0, done.stderr[-4000:]
            mark_built(shared)
    template = json.loads((outdir / f"{STACK}.template.json").read_text())
    return Synthesized(outdir=outdir, template=template)


def test_stages_in_order(synthesized: Synthesized) -> None:
    names = [s["Name"] for s in synthesized.stages]
    assert names == ["Source", "Build", "UpdatePipeline", "Assets", "Staging", "Production"]
    (source,) = synthesized.stage("Source")["Actions"]
    assert source["ActionTypeId"]["Provider"] == "CodeStarSourceConnection"
    assert source["Configuration"]["FullRepositoryId"] == "my-org/smkit"
    assert source["Configuration"]["BranchName"] == "main"


def test_manual_approval_comes_before_every_production_deploy(synthesized: Synthesized) -> None:
    actions = synthesized.stage("Production")["Actions"]
    approvals = [a for a in actions if a["ActionTypeId"]["Category"] == "Approval"]
    deploys = [a for a in actions if a["ActionTypeId"]["Category"] == "Deploy"]
    assert [a["Name"] for a in approvals] == ["PromoteToProduction"]
    assert deploys and all(d["RunOrder"] > approvals[0]["RunOrder"] for d in deploys)
    assert not [
        a for a in synthesized.stage("Staging")["Actions"] if a["ActionTypeId"]["Category"] == "Approval"
    ]


def test_production_deploys_into_the_production_account(synthesized: Synthesized) -> None:
    config = yaml.safe_load((REPO / CONFIG_FILE).read_text())["pipeline"]
    prod, staging = config["production"], config["staging"]
    for stage, target in (("Production", prod), ("Staging", staging)):
        roles = [
            a["Configuration"]["RoleArn"]["Fn::Sub"]
            for a in synthesized.stage(stage)["Actions"]
            if a["ActionTypeId"]["Category"] == "Deploy" and "RoleArn" in a["Configuration"]
        ]
        expected = f":iam::{target['account']}:role/cdk-hnb659fds-cfn-exec-role-{target['account']}-{target['region']}"
        assert roles and all(r.endswith(expected) for r in roles)
    assert (prod["account"], prod["region"]) != (staging["account"], staging["region"])


def test_synth_step_runs_exactly_the_gates(synthesized: Synthesized) -> None:
    (synth,) = synthesized.stage("Build")["Actions"]
    spec = synthesized.buildspec(synth["Configuration"]["ProjectName"])
    assert spec["phases"]["install"]["commands"] == ["make setup"]
    commands = spec["phases"]["build"]["commands"]
    assert commands == pipeline_synth_commands(CONFIG_FILE)
    assert commands[: len(gate_commands())] == gate_commands()
    synth = f"npx --no-install cdk synth -c config={CONFIG_FILE} -c pipeline=true"
    assert commands[-2:] == [
        synth,
        f"STAGES=$(.venv/bin/python -m smkit.release.stage_state {CONFIG_FILE} cdk.out)"
        f' && if [ -n "$STAGES" ]; then eval "{synth} $STAGES"; fi',
    ]


def test_smoke_test_runs_after_the_staging_deploy_with_the_endpoint_output(synthesized: Synthesized) -> None:
    actions = synthesized.stage("Staging")["Actions"]
    (smoke,) = [a for a in actions if a["Name"] == "SmokeTest"]
    serving_deploy = next(a for a in actions if a["Name"].endswith("StagingServing.Deploy"))
    assert smoke["RunOrder"] > serving_deploy["RunOrder"]
    variables = {v["name"]: v["value"] for v in json.loads(smoke["Configuration"]["EnvironmentVariables"])}
    assert variables["ENDPOINT_NAME"] == f"#{{{serving_deploy['Namespace']}.EndpointName}}"
    assert variables["SMOKE_TEST_ROLE_ARN"].endswith(".SmokeTestRoleArn}")
    spec = synthesized.buildspec(smoke["Configuration"]["ProjectName"])
    assert spec["phases"]["install"]["commands"] == ["make setup"]
    assert spec["phases"]["build"]["commands"] == pipeline_smoke_test_commands(CONFIG_FILE)
    (command,) = spec["phases"]["build"]["commands"]
    assert command.startswith(".venv/bin/python -m scripts.smoke_test --config config/realtime.yaml")
    assert '--endpoint-name "$ENDPOINT_NAME"' in command and '--role-arn "$SMOKE_TEST_ROLE_ARN"' in command
    assert _environment(synthesized, smoke)["ENDPOINT_REGION"] == "eu-west-1"  # the staging region


def _environment(synthesized: Synthesized, action: dict[str, Any]) -> dict[str, str]:
    """The plain environment variables a CodeBuild action's project (or its buildspec) sets."""
    project = synthesized.template["Resources"][action["Configuration"]["ProjectName"]["Ref"]]
    variables = {
        v["Name"]: v["Value"] for v in project["Properties"]["Environment"].get("EnvironmentVariables", [])
    }
    spec = synthesized.buildspec(action["Configuration"]["ProjectName"])
    return {**variables, **spec.get("env", {}).get("variables", {})}


def test_serving_stack_outputs_the_endpoint_name(synthesized: Synthesized) -> None:
    assembly = synthesized.outdir / f"assembly-{STACK}-Staging"
    (serving,) = assembly.glob("*StagingServing*.template.json")
    outputs = json.loads(serving.read_text())["Outputs"]
    assert outputs["EndpointName"]["Value"] == {"Fn::GetAtt": [_endpoint_id(serving), "EndpointName"]}


def _endpoint_id(template_file: Path) -> str:
    resources = json.loads(template_file.read_text())["Resources"]
    (logical,) = [k for k, r in resources.items() if r["Type"] == "AWS::SageMaker::Endpoint"]
    return logical


def test_smoke_test_role_may_only_invoke_the_staged_deployment(synthesized: Synthesized) -> None:
    assembly = synthesized.outdir / f"assembly-{STACK}-Staging"
    (access,) = assembly.glob("*SmokeTestAccess*.template.json")
    resources = json.loads(access.read_text())["Resources"]
    (policy,) = [r for r in resources.values() if r["Type"] == "AWS::IAM::ManagedPolicy"]
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Action"] == "sagemaker:InvokeEndpoint"
    assert statement["Condition"] == {
        "StringEquals": {
            "aws:ResourceTag/smkit:deployment": "tabular-realtime",
            "aws:ResourceTag/smkit:environment": "staging",
        }
    }
    (role,) = [r for r in resources.values() if r["Type"] == "AWS::IAM::Role"]
    (trust,) = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert ":iam::111111111111:root" in json.dumps(trust["Principal"]["AWS"])
    # Only the smoke test's own CodeBuild role, not every principal of the tooling account.
    runner = "arn:aws:iam::111111111111:role/TabularRealtimePipeline-smoke-test"
    assert trust["Condition"] == {"ArnEquals": {"aws:PrincipalArn": runner}}
    (smoke,) = [
        p for p in synthesized.resources("AWS::CodeBuild::Project").values() if "smoke_test" in json.dumps(p)
    ]
    service_role = synthesized.template["Resources"][smoke["Properties"]["ServiceRole"]["Fn::GetAtt"][0]]
    assert service_role["Properties"]["RoleName"] == runner.rsplit("/", 1)[1]


def test_image_assets_are_published_without_attestations(synthesized: Synthesized) -> None:
    projects = synthesized.resources("AWS::CodeBuild::Project")
    assets = [p for k, p in projects.items() if "Assets" in k]
    assert assets
    for project in assets:
        env = {
            v["Name"]: v["Value"]
            for v in project["Properties"]["Environment"].get("EnvironmentVariables", [])
        }
        assert env.get("BUILDX_NO_DEFAULT_ATTESTATIONS") == "1"


def test_build_logs_expire(synthesized: Synthesized) -> None:
    (group_id,) = synthesized.resources("AWS::Logs::LogGroup")
    group = synthesized.template["Resources"][group_id]["Properties"]
    assert group["RetentionInDays"] == 90 and group["KmsKeyId"]
    for project in synthesized.resources("AWS::CodeBuild::Project").values():
        logs = project["Properties"]["LogsConfig"]["CloudWatchLogs"]
        assert logs["GroupName"] == {"Ref": group_id}


def test_each_generated_wildcard_has_its_own_reason(synthesized: Synthesized) -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_iam as iam

    from smkit.cdk.pipeline_parts import GENERATED_WILDCARDS, wildcard_reasons

    assert len({reason for _, reason in GENERATED_WILDCARDS}) == len(GENERATED_WILDCARDS)
    stack = cdk.Stack(cdk.App(), "Foreign")
    policy = iam.Policy(stack, "P", statements=[iam.PolicyStatement(actions=["s3:Put*"], resources=["*"])])
    cfn = policy.node.default_child
    assert isinstance(cfn, iam.CfnPolicy)
    with pytest.raises(ValueError, match=r"no reason covers: Action::s3:Put\*"):
        wildcard_reasons(cfn)


def test_cli_version_comes_from_package_json(synthesized: Synthesized) -> None:
    pinned = json.loads((REPO / "package.json").read_text())["devDependencies"]["aws-cdk"]
    (mutate,) = synthesized.stage("UpdatePipeline")["Actions"]
    spec = synthesized.buildspec(mutate["Configuration"]["ProjectName"])
    assert spec["phases"]["install"]["commands"] == [f"npm install -g aws-cdk@{pinned}"]
    for project in synthesized.resources("AWS::CodeBuild::Project").values():
        assert "@latest" not in project["Properties"]["Source"].get("BuildSpec", "")


def test_artifact_bucket_is_kms_encrypted_versioned_and_logged(synthesized: Synthesized) -> None:
    buckets = synthesized.resources("AWS::S3::Bucket")
    artifacts = [b for b in buckets.values() if "LoggingConfiguration" in b["Properties"]]
    (bucket,) = artifacts
    props = bucket["Properties"]
    assert props["VersioningConfiguration"] == {"Status": "Enabled"}
    (rule,) = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    (key,) = synthesized.resources("AWS::KMS::Key").values()
    assert key["Properties"]["EnableKeyRotation"] is True


def test_cdk_nag_packs_ran_clean(synthesized: Synthesized) -> None:
    # The packs are registered on the app and on each stage; any unacknowledged finding fails the synth
    # (the fixture asserts it succeeded) and lands in this report, which lists only failing plugins.
    report = json.loads((synthesized.outdir / "policy-validation-report.json").read_text())
    assert report["pluginReports"] == []


def test_cfn_lint_finds_nothing(synthesized: Synthesized) -> None:
    templates = sorted(str(p) for p in synthesized.outdir.rglob("*.template.json"))
    assert len(templates) >= 5
    done = subprocess.run(
        [str(Path(sys.executable).with_name("cfn-lint")), *templates],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# --- config: the pipeline: section ------------------------------------------------------------------------


def _config(**pipeline: Any) -> dict[str, Any]:
    data = yaml.safe_load((REPO / CONFIG_FILE).read_text())
    data = copy.deepcopy(data)
    data["pipeline"].update(pipeline)
    return data


def test_codecommit_source_is_accepted() -> None:
    cfg = parse_config(_config(source={"type": "codecommit", "repository": "smkit"}))
    assert cfg.pipeline is not None and cfg.pipeline.source.type == "codecommit"
    assert cfg.pipeline.source.branch == "main"


@pytest.mark.parametrize(
    ("pipeline", "path", "fix"),
    [
        (
            {"production": {"account": "222222222222", "region": "eu-west-1"}},
            "pipeline.production",
            "must differ from pipeline.staging in account or region",
        ),
        (
            {"source": {"type": "connection", "connection_arn": "github-token", "repository": "a/b"}},
            "pipeline.source.connection_arn",
            "arn:aws:codeconnections:REGION:ACCOUNT:connection/ID",
        ),
        (
            {"source": {"type": "connection", "connection_arn": "x", "repository": "no-owner"}},
            "pipeline.source.repository",
            "owner/name of the repository, e.g. my-org/smkit",
        ),
        ({"staging": {"account": "12345", "region": "eu-west-1"}}, "pipeline.staging.account", "12-digit"),
        ({"source": {"type": "svn", "repository": "x"}}, "pipeline.source", "connection"),
    ],
)
def test_bad_pipeline_sections_are_rejected(pipeline: dict[str, Any], path: str, fix: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(_config(**pipeline), source="pipeline.yaml")
    message = str(err.value)
    assert f"  - {path}" in message and fix in message, message


def test_pipeline_without_its_section_names_what_is_missing() -> None:
    data = yaml.safe_load((REPO / CONFIG_FILE).read_text())
    del data["pipeline"]
    script = (
        "import aws_cdk as cdk; from pathlib import Path; from smkit.config import parse_config;"
        "from smkit.config.resolved import resolve;"
        "from smkit.cdk.pipeline_stack import add_pipeline;"
        f"add_pipeline(cdk.App(), deployment=resolve(parse_config({data!r}), Path('config')),"
        " config_path=Path('config/x.yaml'),"
        "cli_version='2.1148.1', project_root=Path.cwd())"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert done.returncode != 0
    assert (
        "config/x.yaml: pipeline: section is missing; -c pipeline=true needs pipeline.source" in done.stderr
    )


def test_cli_version_must_be_pinned(tmp_path: Path) -> None:
    from smkit.cdk.pipeline_stack import cdk_cli_version

    package = tmp_path / "package.json"
    package.write_text(json.dumps({"devDependencies": {"aws-cdk": "^2.1148.1"}}))
    with pytest.raises(
        ValueError, match=r"devDependencies.aws-cdk must pin an exact version, got '\^2.1148.1'"
    ):
        cdk_cli_version(package)
    package.write_text(json.dumps({"devDependencies": {"aws-cdk": "2.1148.1"}}))
    assert cdk_cli_version(package) == "2.1148.1"


def test_commands_must_be_lists_of_shell_lines() -> None:
    script = (
        "import aws_cdk as cdk; from pathlib import Path; from smkit.config import load_deployment;"
        "from smkit.cdk.pipeline_stack import PipelineStack;"
        "PipelineStack(cdk.App(), 'P', deployment=load_deployment(Path('config/realtime.yaml')),"
        " config_file='config/realtime.yaml', install_commands=['true'], synth_commands='make synth',"
        " smoke_test_commands=['true'], cli_version='2.1148.1')"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert done.returncode != 0
    assert (
        "PipelineStack synth_commands='make synth': give a non-empty list of shell lines, "
        "e.g. PipelineCommands.for_project('config/realtime.yaml').synth"
    ) in done.stderr


# --- a project made by `smkit init`: no Makefile, no scripts/ ----------------------------------------------

USER_MODEL = "churn"
USER_STACK = "ChurnPipeline"


def _build_user_project(shared: Path) -> None:
    from click.testing import CliRunner

    from smkit.cli import main

    project = shared / "user-project"
    project.mkdir()
    made = CliRunner().invoke(main, ["init", USER_MODEL, "--root", str(project)])
    assert made.exit_code == 0, made.output
    config = project / "config" / f"{USER_MODEL}.yaml"
    text = config.read_text()
    head, commented = text.split("# pipeline:\n")
    config.write_text(head + "pipeline:\n" + "".join(line[2:] + "\n" for line in commented.splitlines()))
    archive = project / "build" / USER_MODEL / "model.tar.gz"
    archive.parent.mkdir(parents=True)
    with tarfile.open(archive, "w:gz") as tar:
        payload = b"stand-in model"
        info = tarfile.TarInfo("model.joblib")
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    outdir = shared / "cdk.out"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(
        CDK_CONTEXT_JSON=json.dumps({"config": f"config/{USER_MODEL}.yaml", "pipeline": "true"}),
        CDK_OUTDIR=str(outdir),
        JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20",
    )
    done = subprocess.run(
        [sys.executable, "-m", "smkit.cdk.app"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    mark_built(shared)


@pytest.fixture(scope="module")
def user_project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Synthesized]:
    """``smkit init churn`` in an empty folder, its config's commented pipeline: section switched on, a
    stand-in model archive where ``smkit package`` writes it, and the default app (``python -m smkit.cdk.app``,
    what ``smkit synth`` runs) synthesized with ``-c pipeline=true``, cdk-nag included."""
    with built_once(tmp_path_factory, "user-pipeline") as (shared, built):
        if not built:
            shutil.rmtree(shared / "user-project", ignore_errors=True)  # an earlier holder's failed attempt
            _build_user_project(shared)
    project, outdir = shared / "user-project", shared / "cdk.out"
    template = json.loads((outdir / f"{USER_STACK}.template.json").read_text())
    return project, Synthesized(outdir=outdir, template=template)


def test_init_project_has_no_makefile_or_scripts(user_project: tuple[Path, Synthesized]) -> None:
    project, _ = user_project
    assert not (project / "Makefile").exists() and not (project / "scripts").exists()
    assert json.loads((project / "cdk.json").read_text())["app"] == "python -m smkit.cdk.app"


def test_init_project_pipeline_runs_the_smkit_cli(user_project: tuple[Path, Synthesized]) -> None:
    from smkit import __version__
    from smkit.cdk.pipeline_stack import PipelineCommands

    _, synthesized = user_project
    config_file = f"config/{USER_MODEL}.yaml"
    expected = PipelineCommands.for_project(config_file)
    (synth,) = synthesized.stage("Build")["Actions"]
    spec = synthesized.buildspec(synth["Configuration"]["ProjectName"])
    assert spec["phases"]["install"]["commands"] == [f'pip install "smkit[cdk]=={__version__}"']
    assert spec["phases"]["build"]["commands"] == [
        f"smkit synth --config {config_file} --output cdk.out -c pipeline=true --read-stages"
    ]
    (smoke,) = [a for a in synthesized.stage("Staging")["Actions"] if a["Name"] == "SmokeTest"]
    spec = synthesized.buildspec(smoke["Configuration"]["ProjectName"])
    assert spec["phases"]["install"]["commands"] == list(expected.install)
    assert spec["phases"]["build"]["commands"] == list(expected.smoke_test)
    assert spec["phases"]["build"]["commands"][-1] == (
        f"AWS_PROFILE=smkit-smoke-test smkit smoke-test --config {config_file}"
        ' --endpoint "$ENDPOINT_NAME" --region "$ENDPOINT_REGION"'
    )
    assert _environment(synthesized, smoke)["ENDPOINT_REGION"] == "eu-west-1"


def test_init_project_pipeline_names_nothing_of_this_repository(
    user_project: tuple[Path, Synthesized],
) -> None:
    _, synthesized = user_project
    for path in synthesized.outdir.rglob("*.template.json"):
        text = path.read_text()
        for repository_only in (
            "make setup",
            "make lint",
            "make package-model",
            "scripts.smoke_test",
            ".venv/",
        ):
            assert repository_only not in text, f"{path.name} names {repository_only!r}"


def test_init_project_pipeline_passes_cdk_nag_and_cfn_lint(user_project: tuple[Path, Synthesized]) -> None:
    _, synthesized = user_project
    report = json.loads((synthesized.outdir / "policy-validation-report.json").read_text())
    assert report["pluginReports"] == []
    templates = sorted(str(p) for p in synthesized.outdir.rglob("*.template.json"))
    assert len(templates) >= 5
    done = subprocess.run(
        [str(Path(sys.executable).with_name("cfn-lint")), *templates],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# --- a config deploying a model registry version --------------------------------------------------------


PACKAGE_IMAGE = "683313688378.dkr.ecr.eu-west-1.amazonaws.com/sagemaker-xgboost:1.7-1"


@pytest.fixture(scope="module")
def with_package(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """The pipeline of config/realtime.yaml deploying model package version churn/3."""
    folder = tmp_path_factory.mktemp("package-pipeline")
    data = yaml.safe_load((REPO / CONFIG_FILE).read_text())
    data["image"] = {"source": "dlc", "uri": PACKAGE_IMAGE}
    data["model"]["containers"][0]["model_data"] = {
        "source": "model-package",
        "package": "churn/3",
        "uri": "s3://training-output-eu/churn/",
    }
    config = folder / "package.yaml"
    config.write_text(yaml.safe_dump(data))
    done = subprocess.run(
        [sys.executable, "-c", SYNTH_SCRIPT, str(folder / "cdk.out"), str(config)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    template = json.loads((folder / "cdk.out" / f"{STACK}.template.json").read_text())
    return Synthesized(outdir=folder / "cdk.out", template=template)


def test_each_stage_deploys_a_package_only_once_smkit_finds_it_approved(with_package: Synthesized) -> None:
    pipeline = yaml.safe_load((REPO / CONFIG_FILE).read_text())["pipeline"]
    for stage, target in (("Staging", pipeline["staging"]), ("Production", pipeline["production"])):
        actions = with_package.stage(stage)["Actions"]
        (check,) = [a for a in actions if a["Name"] == f"ModelPackageApproved{stage}"]
        deploys = [a for a in actions if a["ActionTypeId"]["Category"] == "Deploy"]
        assert deploys and all(d["RunOrder"] > check["RunOrder"] for d in deploys)
        spec = with_package.buildspec(check["Configuration"]["ProjectName"])
        (command,) = spec["phases"]["build"]["commands"]
        assert command.startswith(".venv/bin/smkit approved --config ")  # after make setup
        assert command.endswith(f"--account {target['account']} --region {target['region']}")
        arn = f":sagemaker:{target['region']}:{target['account']}:model-package/churn/3"
        grants = [
            s
            for p in with_package.resources("AWS::IAM::Policy").values()
            for s in p["Properties"]["PolicyDocument"]["Statement"]
            if s["Action"] == "sagemaker:DescribeModelPackage"
        ]
        assert any(arn in json.dumps(s["Resource"]) for s in grants), grants
    production = with_package.stage("Production")["Actions"]
    (approval,) = [a for a in production if a["ActionTypeId"]["Category"] == "Approval"]
    (check,) = [a for a in production if a["Name"] == "ModelPackageApprovedProduction"]
    assert check["RunOrder"] > approval["RunOrder"]  # the status when the version is promoted


def test_the_package_pipeline_is_clean_under_cdk_nag_and_cfn_lint(with_package: Synthesized) -> None:
    report = json.loads((with_package.outdir / "policy-validation-report.json").read_text())
    assert report["pluginReports"] == []
    templates = sorted(str(p) for p in with_package.outdir.rglob("*.template.json"))
    done = subprocess.run(
        [str(Path(sys.executable).with_name("cfn-lint")), *templates],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
