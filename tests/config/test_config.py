"""The config schema: every shipped file loads; every rejection names path, value and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from config_harness import CONFIG_DIR, SHIPPED, raw

from smkit.config import ConfigError, DeploymentConfig, load_config, parse_config


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_configs_load(path: Path) -> None:
    cfg = load_config(path)
    assert isinstance(cfg, DeploymentConfig)
    assert cfg.name


def test_shipped_configs_cover_every_endpoint_type() -> None:
    types = {load_config(p).endpoint.type for p in SHIPPED}
    assert types == {
        "realtime",
        "serverless",
        "multi-model",
        "multi-container",
        "async",
        "inference-components",
    }
    modes = {load_config(p).model.inference_mode for p in SHIPPED}
    assert {"serial", "direct"} <= modes


def test_config_is_frozen() -> None:
    cfg = load_config(CONFIG_DIR / "realtime.yaml")
    with pytest.raises(ValueError, match="frozen"):
        cfg.endpoint.variants[0].initial_weight = 2.0  # type: ignore[misc]


def test_async_section_uses_yaml_key() -> None:
    cfg = load_config(CONFIG_DIR / "async.yaml")
    assert cfg.endpoint.async_ is not None
    assert cfg.endpoint.async_.failure_prefix == "async/failure"


def test_all_problems_reported_together() -> None:
    data = raw("realtime.yaml")
    data["endpoint"]["variants"][0]["instance_type"] = "ml.t2.large"
    data["endpoint"]["deployment"]["strategy"] = "linear"
    data["monitoring"]["backlog_age_seconds"] = 600
    with pytest.raises(ConfigError) as excinfo:
        parse_config(data)
    paths = {i.path for i in excinfo.value.issues}
    assert {
        "endpoint.variants[0].instance_type",
        "endpoint.deployment.linear_step_percent",
        "endpoint.deployment.canary_size_percent",
        "monitoring.backlog_age_seconds",
    } <= paths
    assert "(4 problems)" in str(excinfo.value) or "(5 problems)" in str(excinfo.value)


def test_missing_file_lists_known_configs(tmp_path: Path) -> None:
    (tmp_path / "realtime.yaml").write_text("name: x\n")
    with pytest.raises(ConfigError, match=r"no such file; files in .*: realtime.yaml"):
        load_config(tmp_path / "realtme.yaml")


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nendpoint: [unclosed\n")
    with pytest.raises(ConfigError, match=r"line \d+, column \d+.*not valid YAML"):
        load_config(bad)


def test_empty_document(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing\n")
    with pytest.raises(ConfigError, match="an empty document.*expected a mapping"):
        load_config(empty)


def test_a_build_image_without_context_is_the_kits_image(tmp_path: Path) -> None:
    built = [(path, load_config(path).image) for path in SHIPPED]
    # Every shipped config builds this kit's image except tf-insurance.yaml (AWS's TF Serving image) and
    # llm.yaml (AWS's LMI image).
    assert {path.name for path, image in built if image.source != "build"} == {
        "tf-insurance.yaml",
        "llm.yaml",
    }
    assert all(image.context is None for _, image in built if image.source == "build")
    # A context of your own is relative to the config file, like every path in it.
    (tmp_path / "docker").mkdir()
    (tmp_path / "serving.yaml").write_text(
        yaml.safe_dump({**raw("realtime.yaml"), "image": {"source": "build", "context": "docker"}})
    )
    image = load_config(tmp_path / "serving.yaml").image
    assert image.source == "build" and image.context == str(tmp_path / "docker")
    data = raw("realtime.yaml")
    data["image"] = {"source": "build", "dockerfile": "docker/Dockerfile"}
    with pytest.raises(
        ConfigError,
        match=r"image.dockerfile: 'docker/Dockerfile': a Dockerfile of your own needs image.context",
    ):
        parse_config(data)


def test_image_requirements_is_relative_to_the_config_file(tmp_path: Path) -> None:
    path = CONFIG_DIR / "multi-model.yaml"
    image = load_config(path).image
    assert image.source == "build"
    assert image.requirements == str(CONFIG_DIR.parent / "container" / "requirements-sklearn.txt")
    data = raw("multi-model.yaml")
    data["image"]["requirements"] = "no-such-requirements.txt"
    copy = tmp_path / "multi-model.yaml"
    copy.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as info:
        load_config(copy)
    message = str(info.value)
    assert "image.requirements: " in message and "no-such-requirements.txt" in message, message
    assert "no such file; give a pip requirements file, relative to the config file" in message, message
