"""``image.requirements``: the config's file reaches container/Dockerfile as the IMAGE_REQUIREMENTS build
argument of the CDK Docker image asset, and the staged build context holds it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from stack_support import ROOT, SynthesizedApp

from smkit.config import ConfigError, load_config


def _docker_image(synthesized: SynthesizedApp, case: str) -> dict[str, Any]:
    stack = synthesized.stacks[case].serving
    manifest = json.loads((synthesized.outdir / f"{stack.artifact_id}.assets.json").read_text())
    images = list(manifest["dockerImages"].values())
    assert len(images) == 1, case
    source: dict[str, Any] = images[0]["source"]
    return source


@pytest.mark.parametrize(
    "case", ["multi-model", "multi-container", "multi-container-direct", "inference-components"]
)
def test_the_scikit_learn_examples_build_their_image_with_the_requirements_file(
    synthesized: SynthesizedApp, case: str
) -> None:
    source = _docker_image(synthesized, case)
    # The kit's image context holds the config's file under a fixed name, which the build argument names.
    assert source["dockerBuildArgs"] == {"IMAGE_REQUIREMENTS": "container/requirements-image.txt"}
    staged = synthesized.outdir / source["directory"] / "container" / "requirements-image.txt"
    assert staged.read_text() == (ROOT / "container" / "requirements-sklearn.txt").read_text()


def test_a_config_without_it_passes_no_build_argument(synthesized: SynthesizedApp) -> None:
    assert "dockerBuildArgs" not in _docker_image(synthesized, "realtime")


def test_the_file_must_be_inside_the_build_context(tmp_path: Path) -> None:
    # A config rule (smkit.config.resolved): the local endpoint refuses it exactly as synth does.
    data = yaml.safe_load((ROOT / "config" / "multi-model.yaml").read_text())
    data["image"]["context"] = str(ROOT)
    (tmp_path / "requirements.txt").write_text("lightgbm==4.7.0\n")
    data["image"]["requirements"] = "requirements.txt"
    config = tmp_path / "outside.yaml"
    config.write_text(yaml.safe_dump(data))
    with pytest.raises(
        ConfigError, match=r"image.requirements: '.*requirements.txt': outside image.context .*move the file"
    ):
        load_config(config)
    data["image"]["requirements"] = "missing.txt"
    config.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"image.requirements: '.*missing.txt': no such file"):
        load_config(config)
