"""``smkit init NAME --framework vllm --handler``: the custom handler file of AWS's vLLM image and its
requirements.txt in the model folder; refused for a model framework and over an existing file, before
anything is written. tests/llm/test_init_handler_served.py checks and serves it with the real engine."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from smkit.cli import main


def _init(root: Path, *args: str):
    return CliRunner().invoke(main, ["init", "chat", "--root", str(root), *args])


def test_handler_writes_model_py_and_requirements_into_the_model_folder(tmp_path: Path) -> None:
    result = _init(tmp_path, "--framework", "vllm", "--handler")
    assert result.exit_code == 0, result.output
    model = tmp_path / "model_code" / "chat" / "model"
    assert f"created {model / 'model.py'}" in result.output
    assert f"created {model / 'requirements.txt'}" in result.output
    assert "smkit package --config config/chat.yaml checks it" in result.output
    text = (model / "model.py").read_text()
    assert "@sagemaker_standards.custom_ping_handler" in text and "@input_formatter" in text
    assert '"model_version"] = "chat-1"' in text
    compile(text, "model.py", "exec")


def test_handler_is_refused_for_a_model_framework(tmp_path: Path) -> None:
    result = _init(tmp_path, "--framework", "sklearn", "--handler")
    assert result.exit_code == 1
    assert (
        "--handler writes model.py for AWS's vLLM image; --framework sklearn has inference.py"
        in result.output
    )
    assert not (tmp_path / "config").exists()


def test_handler_never_overwrites_a_model_py(tmp_path: Path) -> None:
    existing = tmp_path / "model_code" / "chat" / "model" / "model.py"
    existing.parent.mkdir(parents=True)
    existing.write_text("# mine\n")
    result = _init(tmp_path, "--framework", "vllm", "--handler")
    assert result.exit_code == 1
    assert f"{existing} exists already; remove it, or leave out --handler" in result.output
    assert existing.read_text() == "# mine\n"
    assert not (tmp_path / "config").exists()
