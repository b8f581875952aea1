"""``smkit emulator deploy`` of config/inference-components.yaml: the real CDK CLI, InService, components listed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from deploy_support import REPO

from smkit.cli import main
from smkit.emulator import MotoServer

pytestmark = pytest.mark.slow


@pytest.fixture()
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(REPO)
    yield tmp_path
    left = MotoServer.attach(tmp_path / "moto.json")
    if left is not None:
        left.stop()


def _run(state_dir: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["emulator", "--state-dir", str(state_dir), *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.usefixtures("validated_elsewhere")
def test_deploy_reaches_in_service_with_its_components_listed(state_dir: Path) -> None:
    code, out, err = _run(state_dir, "deploy", "-c", "config/inference-components.yaml")
    assert code == 0, err
    outputs = dict(line.split(" = ", 1) for line in out.splitlines() if " = " in line)
    names = dict(
        p.split("=") for p in outputs["TabularComponentsDevServing.InferenceComponentNames"].split(",")
    )
    assert sorted(names) == ["iris", "tabular"]
    assert "AutoscalingTabularTarget" not in err  # copy scaling is registered (smkit.emulator.moto_scaling)

    code, out, _ = _run(state_dir, "status")
    status = json.loads(out)
    assert status["sagemaker"]["inference_components"] == sorted(f"{n} (InService)" for n in names.values())
    server = MotoServer.attach(state_dir / "moto.json")
    assert server is not None
    endpoint = server.client("sagemaker").describe_endpoint(
        EndpointName=outputs["TabularComponentsDevServing.EndpointName"]
    )
    assert endpoint["EndpointStatus"] == "InService"

    code, out, err = _run(state_dir, "destroy")
    assert code == 0, err
    assert json.loads(out[out.index("{") :])["sagemaker"]["inference_components"] == []
    assert _run(state_dir, "stop")[0] == 0
