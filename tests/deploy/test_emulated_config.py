"""The one override of the emulated deploy (and of CI): an ECR image tag instead of the config's image."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from deploy_support import REPO

from smkit.config import ConfigError, load_config
from smkit.config.overrides import with_image_tag
from smkit.emulator import EMULATED_IMAGE_TAG, CdkError, emulated_image_tag, emulator_cli


def test_build_image_becomes_the_kits_ecr_repository_with_the_emulated_tag() -> None:
    source = REPO / "config" / "realtime.yaml"
    assert emulated_image_tag(source) == EMULATED_IMAGE_TAG
    config = load_config(source, image_tag=EMULATED_IMAGE_TAG)
    assert config.image.source == "ecr"
    assert (config.image.repository, config.image.tag) == (None, EMULATED_IMAGE_TAG)
    # Nothing else changes.
    original = load_config(source)
    assert config.model_dump(exclude={"image"}) == original.model_dump(exclude={"image"})


def test_a_container_level_build_image_is_replaced_and_a_dlc_image_kept(tmp_path: Path) -> None:
    data = yaml.safe_load((REPO / "config" / "realtime.yaml").read_text())
    data["image"] = {"source": "dlc", "uri": "123456789012.dkr.ecr.us-east-1.amazonaws.com/sklearn:1.2-1"}
    data["model"]["containers"][0]["image"] = {"source": "build", "context": "container"}
    source = tmp_path / "mixed.yaml"
    source.write_text(yaml.safe_dump(data))
    config = load_config(source, image_tag=emulated_image_tag(source))
    assert config.image.source == "dlc"
    container_image = config.model.containers[0].image
    assert container_image is not None and container_image.source == "ecr"


def test_an_ecr_image_keeps_its_repository() -> None:
    data = {"image": {"source": "ecr", "repository": "team/models", "tag": "v1"}}
    assert with_image_tag(data, "v2") == {
        "image": {"source": "ecr", "tag": "v2", "repository": "team/models"}
    }


def test_a_config_without_build_images_needs_no_tag(tmp_path: Path) -> None:
    data = yaml.safe_load((REPO / "config" / "serverless.yaml").read_text())
    data["image"] = {"source": "ecr", "tag": "v1"}
    source = tmp_path / "ecr.yaml"
    source.write_text(yaml.safe_dump(data))
    assert emulated_image_tag(source) is None


def test_an_invalid_config_is_refused_with_its_own_message(tmp_path: Path) -> None:
    source = tmp_path / "bad.yaml"
    source.write_text("name: tabular\n")
    with pytest.raises(ConfigError, match=r"bad.yaml is not a valid deployment config"):
        emulated_image_tag(source)


def test_a_bad_tag_is_reported_against_the_config() -> None:
    with pytest.raises(
        ConfigError, match=r"(?s)realtime.yaml \(image tag latest\) is not a valid .*immutable tags"
    ):
        load_config(REPO / "config" / "realtime.yaml", image_tag="latest")


def test_missing_cdk_cli_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no node_modules/.bin/cdk, and no npx either
    with pytest.raises(
        CdkError, match=r"through npx, which is not on PATH; install Node.js .*; in a checkout, `make setup`"
    ):
        emulator_cli(tmp_path, {}).run(["--version"])


def test_a_failing_cdk_command_quotes_its_output(tmp_path: Path) -> None:
    cli = emulator_cli(REPO, {"PATH": os.environ["PATH"], "HOME": str(tmp_path)})
    with pytest.raises(
        CdkError, match=r"`cdk destroy --all --force --concurrency 1 --app .*missing` failed"
    ) as caught:
        cli.destroy(assembly=tmp_path / "missing")
    assert "last " in str(caught.value)
