"""The local endpoint refuses a config it would have to fake: an LLM engine image it cannot run (AWS's LMI
image) or adapter components whose base runs no engine. AWS's vLLM image runs locally (tests/llm)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from smkit.config import parse_config
from smkit.local.endpoint_server import LocalEndpoint, LocalEndpointError

CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"


LMI = "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.33.0-lmi15.0.0-cu128"


def _lmi_config() -> object:
    data = yaml.safe_load((CONFIG_DIR / "llm.yaml").read_text())
    data["image"]["uri"] = LMI
    data["model"]["containers"][0]["environment"] = {"OPTION_ENABLE_LORA": "true", "OPTION_MAX_LORAS": "4"}
    return parse_config(data, source="test", base_dir=CONFIG_DIR)


def test_the_lmi_image_is_refused_with_the_reason_and_the_way_out() -> None:
    with pytest.raises(LocalEndpointError) as caught:
        LocalEndpoint(_lmi_config())
    message = str(caught.value)
    assert "endpoint llm is not run locally" in message
    assert "image is AWS's djl-inference LLM serving image, which the local endpoint cannot run" in message
    assert "DJL Serving" in message and "AWS's vLLM image instead (config/llm.yaml, docs/llm.md)" in message


def test_adapter_components_on_the_kits_image_are_refused() -> None:
    data = yaml.safe_load((CONFIG_DIR / "inference-components.yaml").read_text())
    data["endpoint"]["inference_components"]["components"].append(
        {
            "name": "tabular-tuned",
            "base_component": "tabular",
            "artifact_url": "s3://my-adapters/tuned.tar.gz",
        }
    )
    config = parse_config(data, source="test", base_dir=CONFIG_DIR)
    with pytest.raises(
        LocalEndpointError, match="tabular-tuned is an adapter component of tabular, whose container"
    ):
        LocalEndpoint(config)


def test_the_cli_says_why_without_a_traceback(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from smkit.cli import main

    data = yaml.safe_load((CONFIG_DIR / "llm.yaml").read_text())
    data["image"]["uri"] = LMI
    data["model"]["containers"][0]["environment"] = {"OPTION_ENABLE_LORA": "true"}  # the adapter needs it
    (tmp_path / "lmi.yaml").write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(main, ["local-endpoint", "--config", str(tmp_path / "lmi.yaml")])
    assert result.exit_code == 1
    assert "Error: endpoint llm is not run locally" in result.output
    assert "Traceback" not in result.output
