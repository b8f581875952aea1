"""``smkit emulator``: what ``make deploy-local`` / ``make destroy-local`` run, from a folder outside the checkout.

The deploy runs the kit's app (``python -m smkit.cdk.app``) through ``npx --yes aws-cdk@<pin>``, as from a
pip install: the ``npx`` on PATH records its arguments and runs this checkout's copy of that pinned CLI."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from deploy_support import REPO

from smkit.cli import main
from smkit.emulator import MotoServer
from smkit.emulator.moto_server import port_in_use
from smkit.ops.cdk_cli import CDK_CLI_VERSION

pytestmark = pytest.mark.slow


@pytest.fixture()
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A state dir for the CLI's detached server; the server is stopped even if the test fails."""
    monkeypatch.chdir(REPO)
    yield tmp_path
    left = MotoServer.attach(tmp_path / "moto.json")
    if left is not None:
        left.stop()


def _run(state_dir: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["emulator", "--state-dir", str(state_dir), *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture()
def npx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project folder as the working directory, and an ``npx`` that records every call (one JSON
    line) and runs the pinned CLI installed in this checkout; returns the record."""
    record = tmp_path / "npx.jsonl"
    fake = tmp_path / "bin" / "npx"
    fake.parent.mkdir()
    cdk = REPO / "node_modules" / ".bin" / "cdk"
    fake.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"open({str(record)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
        f"os.execv({str(cdk)!r}, [{str(cdk)!r}, *sys.argv[3:]])\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    return record


@pytest.mark.usefixtures("validated_elsewhere")
def test_start_deploy_status_destroy_stop(state_dir: Path, npx: Path) -> None:
    code, out, _ = _run(state_dir, "start")
    assert code == 0
    url = out.strip()
    assert url.startswith("http://localhost:")
    assert _run(state_dir, "start")[1].strip() == url  # already running: the same server

    code, out, _ = _run(state_dir, "env")
    assert f"export AWS_ENDPOINT_URL={url}" in out.splitlines()

    code, out, err = _run(state_dir, "deploy", "-c", str(REPO / "config" / "realtime.yaml"))
    assert code == 0, err
    calls = [json.loads(line) for line in npx.read_text().splitlines()]
    assert [call[:3] for call in calls] == [
        ["--yes", f"aws-cdk@{CDK_CLI_VERSION}", "bootstrap"],
        ["--yes", f"aws-cdk@{CDK_CLI_VERSION}", "deploy"],
    ]
    assert calls[1][calls[1].index("--app") + 1] == f"{sys.executable} -m smkit.cdk.app"
    assert "TabularRealtimeDevServing.EndpointName = " in out
    assert "image.source build deployed as" in err
    # Reported, not hidden: what moto cannot create (here the alarm topic's email subscription).
    assert "not created by moto: TabularRealtimeDevServing/MonitoringAlarmTopic" in err

    code, out, _ = _run(state_dir, "status")
    status = json.loads(out)
    assert status["stacks"] == ["CDKToolkit", "TabularRealtimeDevEcr", "TabularRealtimeDevServing"]
    assert len(status["sagemaker"]["endpoints"]) == 1

    code, out, err = _run(state_dir, "destroy")
    assert code == 0, err
    left = json.loads(out[out.index("{") :])
    assert left == {
        "stacks": ["CDKToolkit"],
        "sagemaker": {"models": [], "endpoint_configs": [], "endpoints": [], "inference_components": []},
    }
    assert not list(state_dir.glob("cdk.out.*"))

    port = int(url.rsplit(":", 1)[1])
    assert _run(state_dir, "stop")[0] == 0
    assert not port_in_use(port)
    assert not (state_dir / "moto.json").exists()


def test_commands_that_need_a_server_say_how_to_start_one(state_dir: Path) -> None:
    code, _, err = _run(state_dir, "status")
    assert code == 1
    assert err.strip() == "error: no emulator is running; start one with `smkit emulator start`"
    code, _, err = _run(state_dir, "destroy")
    assert (code, err.strip()) == (0, "no emulator is running; nothing to destroy")


def test_a_bad_config_fails_before_anything_starts(state_dir: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        (REPO / "config" / "realtime.yaml").read_text().replace("name: tabular-realtime", "name: Bad")
    )
    code, _, err = _run(state_dir, "deploy", "-c", str(bad))
    assert code == 1
    assert err.startswith(f"error: {bad} is not a valid deployment config (1 problem):")
    assert "name: 'Bad'" in err
    assert not (state_dir / "moto.json").exists()
