"""publish_image: the content-hash tag, the exact commands, the ECR lookups and the refusal to overwrite."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from scripts import publish_image
from scripts.publish_image import REPO_ROOT
from smkit.emulator.moto_server import MotoServer
from smkit.ops.cdk_cli import CDK_CLI_VERSION
from smkit.release import ecr_image

REGISTRY = "123456789012.dkr.ecr.us-east-1.amazonaws.com"


@pytest.fixture()
def context(tmp_path: Path) -> Path:
    ctx = tmp_path / "container"
    (ctx / "app" / "cache").mkdir(parents=True)
    (ctx / "Dockerfile").write_text("FROM python:3.11-slim\nCOPY app /app\n")
    (ctx / "app" / "serve.py").write_text("print('serve')\n")
    (ctx / "app" / "cache" / "junk.pyc").write_bytes(b"\0junk")
    (ctx / "app" / "keep.pyc").write_bytes(b"\0keep")
    (ctx / "notes.md").write_text("not sent\n")
    (ctx / ".dockerignore").write_text("# comment\n**/*.pyc\n!app/keep.pyc\nnotes.md\n")
    return ctx


def test_context_files_follow_dockerignore(context: Path) -> None:
    assert ecr_image.context_files(context) == [
        ".dockerignore",
        "Dockerfile",
        "app/keep.pyc",
        "app/serve.py",
    ]


def test_tag_is_deterministic_and_follows_the_context(context: Path, tmp_path: Path) -> None:
    tag = ecr_image.image_tag(context)
    assert tag.startswith("ctx-") and len(tag) == 4 + 32
    assert ecr_image.image_tag(context) == tag

    copy = tmp_path / "copy"
    copy.mkdir()
    for rel in ecr_image.context_files(context):
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).write_bytes((context / rel).read_bytes())
    assert ecr_image.image_tag(copy) == tag, "same files, different directory: same tag"

    (context / "notes.md").write_text("ignored files do not change the tag\n")
    (context / "app" / "cache" / "junk.pyc").write_bytes(b"changed")
    assert ecr_image.image_tag(context) == tag

    (context / "app" / "serve.py").chmod(0o755)
    executable = ecr_image.image_tag(context)
    assert executable != tag, "the executable bit is part of the image"

    (context / "app" / "serve.py").write_text("print('changed')\n")
    assert ecr_image.image_tag(context) not in (tag, executable)


def test_missing_dockerfile_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert publish_image.main(["--context", str(tmp_path), "--dockerfile", "Dockerfile", "--tag-only"]) == 1
    assert f"no Dockerfile in build context {tmp_path}" in capsys.readouterr().err


def test_dry_run_prints_the_exact_commands(context: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = f"{REGISTRY}/smkit-serving"
    assert (
        publish_image.main(
            ["--repository-uri", repo, "--context", str(context), "--dockerfile", "Dockerfile", "--dry-run"]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    uri = f"{repo}:{ecr_image.image_tag(context)}"
    assert [shlex.split(line) for line in lines[:3]] == [
        ["docker", "login", "--username", "AWS", "--password-stdin", REGISTRY],
        [
            "docker",
            "build",
            "--platform",
            "linux/amd64",
            "--provenance=false",  # else an OCI index, which CreateModel rejects
            "--file",
            str(context / "Dockerfile"),
            "--tag",
            uri,
            str(context),
        ],
        ["docker", "push", uri],
    ]
    assert lines[3] == uri and len(lines) == 4


def test_repository_by_name_from_ecr(
    aws: MotoServer, context: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = aws.client("ecr").create_repository(repositoryName="by-name")["repository"]["repositoryUri"]
    assert (
        publish_image.main(
            ["--repository", "by-name", "--context", str(context), "--dockerfile", "Dockerfile", "--dry-run"]
        )
        == 0
    )
    assert capsys.readouterr().out.splitlines()[-1] == f"{uri}:{ecr_image.image_tag(context)}"


def test_unknown_repository_is_reported(
    aws: MotoServer, context: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        publish_image.main(
            ["--repository", "nope", "--context", str(context), "--dockerfile", "Dockerfile", "--dry-run"]
        )
        == 1
    )
    assert "ECR repository 'nope' does not exist; deploy the ECR stack first" in capsys.readouterr().err


def test_existing_tag_is_never_overwritten(
    aws: MotoServer, context: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ecr = aws.client("ecr")
    ecr.create_repository(repositoryName="immutable", imageTagMutability="IMMUTABLE")
    tag = ecr_image.image_tag(context)
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json"}
    ecr.put_image(repositoryName="immutable", imageManifest=json.dumps(manifest), imageTag=tag)

    assert (
        publish_image.main(
            ["--repository", "immutable", "--context", str(context), "--dockerfile", "Dockerfile"]
        )
        == 1
    )
    captured = capsys.readouterr()
    assert f"immutable:{tag} already exists and tags are immutable: refusing to overwrite it" in captured.err
    assert "docker" not in captured.err.split("refusing")[0], "nothing ran before the refusal"
    assert captured.out == ""


def test_new_tag_goes_to_docker_login_with_an_ecr_token(
    aws: MotoServer,
    context: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # No Docker engine here: the run stops at the first docker call, which is the one asserted.
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "docker-config"))
    aws.client("ecr").create_repository(repositoryName="fresh")
    assert (
        publish_image.main(["--repository", "fresh", "--context", str(context), "--dockerfile", "Dockerfile"])
        == 1
    )
    err = capsys.readouterr().err
    assert f"+ docker login --username AWS --password-stdin {REGISTRY}\n" in err
    assert f"docker login to {REGISTRY} failed with exit code" in err


def test_existing_tag_can_be_skipped_but_not_overwritten(
    aws: MotoServer, context: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ecr = aws.client("ecr")
    uri = ecr.create_repository(repositoryName="rerun")["repository"]["repositoryUri"]
    tag = ecr_image.image_tag(context)
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json"}
    ecr.put_image(repositoryName="rerun", imageManifest=json.dumps(manifest), imageTag=tag)
    args = [
        "--repository",
        "rerun",
        "--context",
        str(context),
        "--dockerfile",
        "Dockerfile",
        "--if-exists",
        "skip",
    ]
    assert publish_image.main(args) == 0
    captured = capsys.readouterr()
    assert captured.out == f"{uri}:{tag}\n"
    assert "already published; nothing to do" in captured.err and "+ docker" not in captured.err


def test_default_context_is_the_repository_with_the_dockerfiles_own_ignore_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The image builds from the repository root with container/Dockerfile (as the CDK asset does)."""
    files = ecr_image.context_files(REPO_ROOT, "container/Dockerfile")
    assert "container/Dockerfile" in files and "container/requirements.txt" in files
    assert any(f.startswith("smkit/serving/") for f in files)
    assert not any(f.startswith(("tests/", "stacks/", "model_code/", "build/", ".venv/")) for f in files)
    repo = "123456789012.dkr.ecr.us-east-1.amazonaws.com/smkit"
    assert publish_image.main(["--repository-uri", repo, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"--file {REPO_ROOT / 'container' / 'Dockerfile'}" in out
    assert out.splitlines()[-1] == f"{repo}:{ecr_image.image_tag(REPO_ROOT, 'container/Dockerfile')}"


def test_make_deploy_is_smkit_deploy() -> None:
    done = subprocess.run(
        ["make", "-n", "deploy", "CONFIG=config/realtime.yaml"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert any(
        line.endswith("smkit deploy --config config/realtime.yaml ") for line in done.stdout.splitlines()
    )


def test_smkit_deploy_runs_the_pinned_cli_without_attestations(tmp_path: Path) -> None:
    """`smkit deploy` builds the `build` image source through the CDK CLI, which runs `docker build`:
    without BuildKit's attestation (an OCI index SageMaker CreateModel rejects), with the kit's app."""
    record = tmp_path / "npx.json"
    fake = tmp_path / "bin" / "npx"
    fake.parent.mkdir()
    fake.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"json.dump({{'argv': sys.argv[1:], 'attest': os.environ.get('BUILDX_NO_DEFAULT_ATTESTATIONS')}}, "
        f"open({str(record)!r}, 'w'))\n"
    )
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}"}
    config = REPO_ROOT / "config" / "tf-insurance.yaml"  # model data from the examples, no model_code archive
    done = subprocess.run(
        [sys.executable, "-m", "smkit.cli", "deploy", "--config", str(config), "--", "--method=direct"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    called = json.loads(record.read_text())
    assert called["attest"] == "1"
    argv = called["argv"]
    assert argv[:4] == ["--yes", f"aws-cdk@{CDK_CLI_VERSION}", "deploy", "--all"]
    assert argv[argv.index("--app") + 1] == f"{sys.executable} -m smkit.cdk.app"
    assert f"config={config}" in argv and argv[-1] == "--method=direct"


def test_the_cli_version_smkit_runs_is_the_one_package_json_pins() -> None:
    package = json.loads((REPO_ROOT / "package.json").read_text())
    assert package["devDependencies"]["aws-cdk"] == CDK_CLI_VERSION
