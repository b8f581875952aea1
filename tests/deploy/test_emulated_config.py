"""emulated_config(): the one substitution of the emulated deploy, and the CDK CLI runner's errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from deploy_support import REPO

from smkit.config import ConfigError, absolute_paths, load_config
from smkit.emulator import EMULATED_IMAGE_TAG, CdkCli, CdkError, emulated_config


def test_build_image_becomes_the_kits_ecr_repository_with_the_emulated_tag(tmp_path: Path) -> None:
    source = REPO / "config" / "realtime.yaml"
    derived = emulated_config(source, tmp_path)
    assert derived == tmp_path / "realtime.yaml"
    config = load_config(derived)
    assert config.image.source == "ecr"
    assert (config.image.repository, config.image.tag) == (None, EMULATED_IMAGE_TAG)
    # Nothing else changes (paths are written absolute: the derived file lives elsewhere).
    original = absolute_paths(yaml.safe_load(source.read_text()), source.parent)
    changed = yaml.safe_load(derived.read_text())
    assert {k: v for k, v in changed.items() if k != "image"} == {
        k: v for k, v in original.items() if k != "image"
    }


def test_a_container_level_build_image_is_replaced_too(tmp_path: Path) -> None:
    data = yaml.safe_load((REPO / "config" / "realtime.yaml").read_text())
    data["image"] = {"source": "dlc", "uri": "123456789012.dkr.ecr.us-east-1.amazonaws.com/sklearn:1.2-1"}
    data["model"]["containers"][0]["image"] = {"source": "build", "context": "container"}
    source = tmp_path / "mixed.yaml"
    source.write_text(yaml.safe_dump(data))
    config = load_config(emulated_config(source, tmp_path / "out"))
    assert config.image.source == "dlc"
    container_image = config.model.containers[0].image
    assert container_image is not None and container_image.source == "ecr"


def test_a_config_without_build_images_is_used_as_it_is(tmp_path: Path) -> None:
    data = yaml.safe_load((REPO / "config" / "serverless.yaml").read_text())
    data["image"] = {"source": "ecr", "tag": "v1"}
    source = tmp_path / "ecr.yaml"
    source.write_text(yaml.safe_dump(data))
    assert emulated_config(source, tmp_path / "out") == source
    assert not (tmp_path / "out").exists()


def test_an_invalid_config_is_refused_with_its_own_message(tmp_path: Path) -> None:
    source = tmp_path / "bad.yaml"
    source.write_text("name: tabular\n")
    with pytest.raises(ConfigError, match=r"bad.yaml is not a valid deployment config"):
        emulated_config(source, tmp_path / "out")


def test_missing_cdk_cli_says_how_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(
        CdkError, match=r"the CDK CLI is not installed at .*node_modules/.bin/cdk; run `make setup`"
    ):
        CdkCli(repo_root=tmp_path, env={}).run(["--version"])


def test_a_failing_cdk_command_quotes_its_output(tmp_path: Path) -> None:
    cli = CdkCli(repo_root=REPO, env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)})
    with pytest.raises(
        CdkError, match=r"`cdk destroy --all --force --concurrency 1 --app .*missing` failed"
    ) as caught:
        cli.destroy(assembly=tmp_path / "missing")
    assert "last " in str(caught.value)
