"""The local endpoint refuses a config it would have to fake: an LLM engine image or adapter components."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from smkit.config import parse_config
from smkit.local.server import LocalEndpoint, LocalEndpointError

CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"


def test_llm_config_is_refused_with_the_reason_and_the_way_out() -> None:
    with pytest.raises(LocalEndpointError) as caught:
        LocalEndpoint(CONFIG_DIR / "llm.yaml")
    message = str(caught.value)
    assert "endpoint llm is not run locally" in message
    assert "image is AWS's djl-inference LLM serving image" in message
    assert "Deploying an LLM" in message


def test_adapter_components_on_the_kits_image_are_refused() -> None:
    data = yaml.safe_load((CONFIG_DIR / "inference-components.yaml").read_text())
    data["endpoint"]["inference_components"]["components"].append(
        {"name": "tabular-tuned", "base_component": "tabular", "artifact_url": "s3://my-adapters/tuned/"}
    )
    config = parse_config(data, source="test", base_dir=CONFIG_DIR)
    with pytest.raises(LocalEndpointError, match="tabular-tuned are adapter components"):
        LocalEndpoint(config)


def test_the_cli_says_why_without_a_traceback() -> None:
    from click.testing import CliRunner

    from smkit.cli import main

    result = CliRunner().invoke(main, ["local-endpoint", "--config", str(CONFIG_DIR / "llm.yaml")])
    assert result.exit_code == 1
    assert "Error: endpoint llm is not run locally" in result.output
    assert "Traceback" not in result.output
