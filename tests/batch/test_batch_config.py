"""``--config``: the model and container environment of a deployment YAML drive a local job."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from smkit.batch.local import model_from_deployment
from smkit.cli import main
from smkit.config import load_deployment

REPO = Path(__file__).resolve().parents[2]


def test_config_model_and_environment_run_the_job(demo_archive: Path, tmp_path: Path) -> None:
    text = (REPO / "config" / "realtime.yaml").read_text()
    assert "path: ../build/model.tar.gz" in text
    config = tmp_path / "batch.yaml"
    config.write_text(
        text.replace("path: ../build/model.tar.gz", f"path: {demo_archive}").replace(
            "SAGEMAKER_PROGRAM: inference.py", "SAGEMAKER_PROGRAM: inference_lines.py"
        )
    )
    model = model_from_deployment(load_deployment(config), str(config))
    assert model.path == demo_archive
    assert model.environment["SAGEMAKER_PROGRAM"] == "inference_lines.py"
    (tmp_path / "in.jsonl").write_text('{"value":1}\n{"value":2}\n{"value":5}\n')
    result = CliRunner().invoke(
        main,
        ["batch-transform", "--local", "--config", str(config), "--input", str(tmp_path / "in.jsonl"),
         "--output", str(tmp_path / "out"), "--content-type", "application/json", "--split-type", "Line",
         "--batch-strategy", "MultiRecord", "--assemble-with", "Line"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    # inference_lines.py (the config's SAGEMAKER_PROGRAM) splits the MultiRecord body itself.
    assert (tmp_path / "out" / "in.jsonl.out").read_text(encoding="utf-8").splitlines() == [
        '{"output": "I want to 🍵"}',
        '{"output": "I want to 🍣"}',
        '{"output": "I want to 🍵"}',
    ]
    assert "BatchStrategy=MULTI_RECORD" in result.stderr


@pytest.mark.parametrize("name", ["multi-container.yaml", "multi-model.yaml"])
def test_configs_batch_cannot_run_are_refused(name: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["batch-transform", "--local", "--config", str(REPO / "config" / name), "--input", str(tmp_path),
         "--output", str(tmp_path / "out")],
    )  # fmt: skip
    assert result.exit_code == 1
    assert "runs one single-model container" in result.stderr
