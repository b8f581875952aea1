"""``smkit init NAME --framework vllm``: an LLM config with a base and an adapter component from local folders,
the adapter archived by ``smkit package`` (byte-identical across runs), and config/llm.yaml as its deploy
example. Model and adapter folders are written as Hugging Face and PEFT save them (config.json, a
safetensors header, tokenizer.json; adapter_config.json), without the engine, by smkit.llm.tiny."""

from __future__ import annotations

import copy
import hashlib
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from smkit.cli import main
from smkit.config import ConfigError, load_config, load_deployment
from smkit.llm.tiny import CONTEXT, SHAPE, write_adapter_shape, write_model_shape
from smkit.packaging import PackagingError
from smkit.packaging.folder import archive_folder

REPO = Path(__file__).resolve().parents[2]


def init_project(root: Path, name: str = "chat") -> Path:
    result = CliRunner().invoke(main, ["init", name, "--framework", "vllm", "--root", str(root)])
    assert result.exit_code == 0, result.output
    assert f"python -m smkit.llm.tiny model_code/{name}" in result.output
    write_model_shape(root / "model_code" / name / "model", SHAPE, 16)
    write_adapter_shape(root / "model_code" / name / "adapter")
    return root / "config" / f"{name}.yaml"


def test_init_vllm_writes_a_base_and_an_adapter_from_local_folders(tmp_path: Path) -> None:
    config = init_project(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".gitignore", "cdk.json", "config", "model_code"]
    deployment = load_deployment(config)
    spec = deployment.components
    assert spec is not None and [c.name for c in spec.components] == ["chat", "chat-adapter"]
    (container,) = deployment.containers
    assert container.model_data.kind == "prefix"
    assert container.model_data.path == tmp_path / "model_code" / "chat" / "model"
    assert container.environment["SM_VLLM_MAX_MODEL_LEN"] == str(CONTEXT)
    adapter = spec.adapters[0]
    assert adapter.artifact_url is None
    assert adapter.artifact_path == str(tmp_path / "model_code" / "chat" / "adapter")
    assert spec.adapter_archives == {
        "chat-adapter": tmp_path / "build" / "chat" / "adapters" / "chat-adapter.tar.gz"
    }


def test_config_llm_yaml_is_what_init_writes_with_its_weights_in_s3(tmp_path: Path) -> None:
    """The repository's example differs from init's output only in what docs/llm.md names: the model's
    weights and adapter in S3 instead of local folders, the model's context and the names."""
    init_project(tmp_path, "llm")
    written = yaml.safe_load((tmp_path / "config" / "llm.yaml").read_text())
    example = yaml.safe_load((REPO / "config" / "llm.yaml").read_text())
    expected = copy.deepcopy(written)
    (container,) = expected["model"]["containers"]
    base, adapter = expected["endpoint"]["inference_components"]["components"]
    (shipped,) = example["model"]["containers"]
    shipped_base, shipped_adapter = example["endpoint"]["inference_components"]["components"]
    container["name"] = base["name"] = base["container"] = adapter["base_component"] = shipped["name"]
    container["model_data"] = shipped["model_data"]
    container["environment"]["SM_VLLM_MAX_MODEL_LEN"] = shipped["environment"]["SM_VLLM_MAX_MODEL_LEN"]
    adapter["name"] = shipped_adapter["name"]
    del adapter["artifact_path"]
    adapter["artifact_url"] = shipped_adapter["artifact_url"]
    assert expected == example


def test_package_archives_the_adapter_folder_byte_for_byte_the_same(tmp_path: Path) -> None:
    config = init_project(tmp_path)
    archive = tmp_path / "build" / "chat" / "adapters" / "chat-adapter.tar.gz"
    first = CliRunner().invoke(main, ["package", "--config", str(config)])
    assert first.exit_code == 0, first.output
    assert f"adapter chat-adapter: {archive}" in first.output
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    assert f"sha256 {digest}" in first.output
    with tarfile.open(archive) as tar:
        names = {m.name: (m.mtime, m.uid, m.mode) for m in tar}
    assert names == {
        "adapter_config.json": (0, 0, 0o644),
        "adapter_model.safetensors": (0, 0, 0o644),
    }
    again = CliRunner().invoke(main, ["package", "--config", str(config)])
    assert f"adapter archive {archive} is up to date" in again.output
    adapter = tmp_path / "model_code" / "chat" / "adapter" / "adapter_config.json"
    adapter.write_text(adapter.read_text())  # same bytes, a new mtime: built again, the same archive
    rebuilt = CliRunner().invoke(main, ["package", "--config", str(config)])
    assert "changed since" in rebuilt.output and f"sha256 {digest}" in rebuilt.output


def test_archive_folder_refuses_a_link_out_of_the_folder_and_leaves_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "adapter"
    write_adapter_shape(folder)
    (tmp_path / "secret").write_text("x")
    (folder / "link").symlink_to(tmp_path / "secret")
    out = tmp_path / "out" / "adapter.tar.gz"
    with pytest.raises(PackagingError, match="points outside"):
        archive_folder(folder, out)
    assert not out.exists() and list(tmp_path.glob("out/*")) == []


def _adapter_component(config: Path) -> dict[str, Any]:
    data = yaml.safe_load(config.read_text())
    return data, data["endpoint"]["inference_components"]["components"][1]


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"artifact_url": "s3://b/a.tar.gz"}, "artifact_path", "not both"),
        ({"artifact_path": None}, "artifact_url", "artifact_path: FOLDER"),
        ({"artifact_path": "../model_code/chat/missing"}, "artifact_path", "is not a folder"),
        ({"artifact_path": "../model_code/chat/model"}, "artifact_path", "has no adapter_config.json"),
    ],
)
def test_an_adapters_local_folder_is_checked_at_load(
    tmp_path: Path, change: dict[str, Any], field: str, words: str
) -> None:
    config = init_project(tmp_path)
    data, adapter = _adapter_component(config)
    adapter.update(change)
    adapter = {k: v for k, v in adapter.items() if v is not None}
    data["endpoint"]["inference_components"]["components"][1] = adapter
    config.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as info:
        load_config(config)
    line = next(line for line in str(info.value).splitlines() if f"components[1].{field}" in line)
    assert words in line


def test_a_base_component_takes_no_artifact_path(tmp_path: Path) -> None:
    config = init_project(tmp_path)
    data, _ = _adapter_component(config)
    data["endpoint"]["inference_components"]["components"][0]["artifact_path"] = "../model_code/chat/adapter"
    config.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"components\[0\].artifact_path.*only adapter components"):
        load_config(config)


def test_the_adapters_rank_is_read_from_its_folder(tmp_path: Path) -> None:
    config = init_project(tmp_path)
    adapter = tmp_path / "model_code" / "chat" / "adapter" / "adapter_config.json"
    adapter.write_text(json.dumps({"peft_type": "LORA", "r": 128}))
    with pytest.raises(ConfigError, match=r"SM_VLLM_MAX_LORA_RANK.*rank 128"):
        load_config(config)
