"""deploy -> deploy -> smoke test -> rollback, with the real CDK CLI against moto's server and the smoke test
against the local endpoint serving the deployed endpoint's name (moto's endpoints answer no invocations)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from scripts import deploy, rollback, smoke_test
from smkit.config import absolute_paths
from smkit.emulator.moto_server import MotoServer
from smkit.local.endpoint_server import LocalEndpoint
from smkit.release.history import read_releases, release_parameter

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "config" / "realtime.yaml"
# The release flow deploys a copy under its own name: the session's moto server is shared with the
# emulated deploy of every shipped config (tests/deploy), whose stacks must stay untouched.
NAME = "release-flow"
CONFIG = "config/realtime.yaml"  # for the tests that deploy nothing
FIRST = "ctx-" + "1" * 32
SECOND = "ctx-" + "2" * 32


def _images(aws: MotoServer, endpoint: str) -> list[str]:
    sm = aws.client("sagemaker")
    config = sm.describe_endpoint_config(
        EndpointConfigName=sm.describe_endpoint(EndpointName=endpoint)["EndpointConfigName"]
    )
    models = {v["ModelName"] for v in config["ProductionVariants"]}
    return sorted(sm.describe_model(ModelName=m)["PrimaryContainer"]["Image"] for m in models)


@pytest.fixture()
def config(tmp_path: Path) -> str:
    """config/realtime.yaml as ``release-flow`` (its paths made absolute: the copy lives elsewhere)."""
    data = absolute_paths(yaml.safe_load(SHIPPED.read_text(encoding="utf-8")), SHIPPED.parent)
    path = tmp_path / "release-flow.yaml"
    path.write_text(yaml.safe_dump({**data, "name": NAME}, sort_keys=False), encoding="utf-8")
    return str(path)


@pytest.mark.slow
@pytest.mark.usefixtures("validated_elsewhere")
def test_deploy_smoke_test_and_rollback(
    aws: MotoServer, config: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "cdk.out")
    parameter = release_parameter(NAME, "dev")

    assert (
        deploy.main(
            ["--config", config, "--image-tag", FIRST, "--bootstrap", "--output", out, "--method", "direct"]
        )
        == 0
    )
    first_endpoint = capsys.readouterr().out.strip()
    assert (
        aws.client("sagemaker").describe_endpoint(EndpointName=first_endpoint)["EndpointStatus"]
        == "InService"
    )
    (image,) = _images(aws, first_endpoint)
    assert image.endswith(f":{FIRST}")

    args = [
        "--config",
        config,
        "--image-tag",
        SECOND,
        "--skip-package",
        "--output",
        out,
        "--method",
        "direct",
    ]
    assert deploy.main(args) == 0
    second_endpoint = capsys.readouterr().out.strip()
    assert _images(aws, second_endpoint)[0].endswith(f":{SECOND}")
    history = read_releases(parameter)
    assert [r.image_tag for r in history] == [FIRST, SECOND]
    archive = history[0].containers[0]
    assert archive.data_type == "archive" and archive.model_data and archive.model_data.startswith("s3://")

    # The smoke test finds the endpoint in the release history and calls it through `smkit smoke-test`.
    with LocalEndpoint(Path(config), name=second_endpoint, root=REPO) as local:
        assert smoke_test.main(["--config", config, "--endpoint-url", local.url]) == 0
    assert f"smoke test of {second_endpoint} passed" in capsys.readouterr().err

    assert rollback.main(["--config", config, "--output", out, "--method", "direct"]) == 0
    rolled = capsys.readouterr().out.strip()
    assert _images(aws, rolled)[0].endswith(f":{FIRST}")
    history = read_releases(parameter)
    assert [r.image_tag for r in history] == [FIRST, SECOND, FIRST]
    assert history[-1].note.startswith("rollback to ")
    assert history[-1].containers[0].model_data == archive.model_data, "the same content-hashed archive"

    assert rollback.main(["--config", config, "--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert len(listed) == 3 and listed[-1].startswith("3\t")


def test_rollback_without_history_says_what_to_do(
    aws: MotoServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert rollback.main(["--config", "config/async.yaml"]) == 1
    assert "only 0 release(s) recorded; cannot go back 1" in capsys.readouterr().err


def test_smoke_test_without_endpoint_or_history(aws: MotoServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert smoke_test.main(["--config", "config/serverless.yaml"]) == 1
    assert "no endpoint given and no release recorded for config/serverless.yaml" in capsys.readouterr().err


def test_deploy_rejects_a_bad_image_tag_before_any_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert deploy.main(["--config", CONFIG, "--image-tag", "latest", "--dry-run"]) == 1
    err = capsys.readouterr().err
    assert "image.tag: 'latest': the repository has immutable tags" in err


def test_deploy_dry_run_prints_the_cli_calls(capsys: pytest.CaptureFixture[str]) -> None:
    assert deploy.main(["--config", CONFIG, "--image-tag", FIRST, "--skip-package", "--dry-run"]) == 0
    # One synth; the deploy reads that assembly instead of running the app again.
    assert capsys.readouterr().out.splitlines() == [
        f"node_modules/.bin/cdk synth --quiet --output cdk.out -c config={CONFIG} -c image_tag={FIRST}",
        "node_modules/.bin/cdk deploy --all --require-approval never --progress events --ci --method=change-set "
        "--app cdk.out",
    ]


def test_bootstrap_reads_the_synthesized_assembly(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--config", CONFIG, "--image-tag", FIRST, "--skip-package", "--bootstrap", "--dry-run"]
    assert deploy.main(argv) == 0
    synth, bootstrap, deploy_all = capsys.readouterr().out.splitlines()
    assert synth.split()[1] == "synth"
    assert bootstrap == "node_modules/.bin/cdk bootstrap --ci --app cdk.out"
    assert deploy_all.endswith("--app cdk.out")


@pytest.mark.usefixtures("validated_elsewhere")
def test_ecr_only_dry_run_names_the_stack_of_the_synthesized_assembly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "cdk.out")
    assert deploy.main(["--config", CONFIG, "--ecr-only", "--output", out, "--dry-run"]) == 0
    (command,) = capsys.readouterr().out.splitlines()
    assert command.split()[:3] == ["node_modules/.bin/cdk", "deploy", "TabularRealtimeDevEcr"]
    assert command.endswith(f"--app {out}")


def test_missing_config_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert deploy.main(["--config", "config/nope.yaml", "--dry-run"]) == 1
    assert "--config config/nope.yaml: no such file" in capsys.readouterr().err


def test_release_history_keeps_the_newest_within_one_parameter(aws: MotoServer) -> None:
    from smkit.release.history import DeployedContainer, Release, record_release

    parameter = "/smkit/history-test/dev/releases"
    container = DeployedContainer(image="x" * 200, model_data="s3://bucket/" + "k" * 200)
    for i in range(12):
        release = Release(endpoint=f"e{i}", containers=(container,), deployed_at=str(i), image_tag=f"t{i}")
        history = record_release(parameter, release)
    assert [r.endpoint for r in history][-1] == "e11"
    assert 1 < len(history) <= 10
    stored = aws.client("ssm").get_parameter(Name=parameter)["Parameter"]["Value"]
    assert len(stored.encode()) <= 4096 and json.loads(stored)[-1]["endpoint"] == "e11"


def test_moto_still_needs_the_update_repairs() -> None:
    """When moto learns these itself, the two update repairs in smkit.emulator.moto_fixes can go."""
    import inspect

    from moto.cloudformation.models import CloudFormationBackend
    from moto.cloudformation.parsing import ResourceMap
    from moto.sagemaker.models import Model

    assert "instance.parameters[parameter" in inspect.getsource(
        CloudFormationBackend._resolve_update_parameters
    )
    assert "new[name] != old[name]" in inspect.getsource(ResourceMap.build_resource_diff)
    assert "new_resource_name" in inspect.getsource(Model.update_from_cloudformation_json)


@pytest.mark.parametrize("config", ["config/inference-components.yaml", "config/realtime-shadow.yaml"])
def test_rollback_refuses_components_and_shadow_variants(config: str) -> None:
    from smkit.release import rollback as library
    from smkit.release.history import DeployedContainer, Release
    from smkit.release.shell import ReleaseError

    data = library.config_data(REPO / config)
    release = Release(
        endpoint="e",
        containers=tuple(
            DeployedContainer(image="i", model_data="s3://b/k") for _ in data["model"]["containers"]
        ),
        deployed_at="2026-01-01T00:00:00Z",
    )
    with pytest.raises(ReleaseError, match="inference components or shadow variants is not supported"):
        library.rollback_config(data, release, root=REPO)
