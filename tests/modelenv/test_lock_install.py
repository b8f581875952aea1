"""A lock of exact pins installed by uv (smkit.modelenv.lockinstall, the engine environment's installer): one
progress bar of packages, uv's output in a log file, a failure naming that file. The pins are packages of
this venv at its versions, so uv installs them from its cache without a network (UV_OFFLINE)."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from smkit.modelenv import ModelEnvError
from smkit.modelenv.lockinstall import BATCH, install_lock

PACKAGES = ("idna", "certifi", "urllib3", "jmespath", "six", "packaging", "click", "tqdm", "pyyaml")
PACKAGES += ("typing-extensions", "python-dateutil", "s3transfer", "jsonpath-ng")


@pytest.fixture
def venv(tmp_path: Path) -> str:
    folder = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    return str(folder / "bin" / "python")


def test_a_lock_installs_in_batches_with_one_bar_and_a_log(
    venv: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("UV_OFFLINE", "1")
    assert len(PACKAGES) > BATCH  # two uv calls
    lock = tmp_path / "lock.txt"
    lock.write_text("# pinned\n" + "".join(f"{name}=={version(name)}\n" for name in PACKAGES))
    log = tmp_path / "logs" / "env.log"
    assert install_lock(venv, lock, log, label="test", progress=True) == len(PACKAGES)
    bar = capsys.readouterr().err
    assert "test environment: 100%" in bar and f"{len(PACKAGES)}/{len(PACKAGES)}" in bar
    assert log.read_text().count("$ ") == 2  # each uv call is logged, with its output
    listed = subprocess.run([venv, "-c", "import idna, yaml, jsonpath_ng"], check=False)
    assert listed.returncode == 0


def test_a_failed_install_names_the_log(venv: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UV_OFFLINE", "1")
    lock = tmp_path / "lock.txt"
    lock.write_text("smkit-no-such-package==1.0\n")
    log = tmp_path / "env.log"
    with pytest.raises(ModelEnvError) as info:
        install_lock(venv, lock, log, label="test", progress=False)
    assert f"the full log: {log}" in str(info.value) and "smkit-no-such-package" in str(info.value)
    assert "smkit-no-such-package" in log.read_text()
