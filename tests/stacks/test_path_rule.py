"""One rule for relative paths in a config: relative to the config file, for ``cdk synth`` and the local
endpoint alike, whatever the working directory.

A config outside the repository names its archive ``../build/mine/model.tar.gz``; synth (the pinned CDK CLI
with the kit's app) and ``smkit local-endpoint`` both run from an unrelated directory. The archive synth
stages as the model data asset and the one the local endpoint serves (it prints its sha256) are the same
file, and it is not the repository's own example archive.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from stack_support import ROOT
from test_cdk_cli import _offline_env

pytestmark = pytest.mark.slow

CONFIG = """\
name: path-rule
environment: dev
image:
  source: ecr
  tag: v1
model:
  network_isolation: true
  containers:
    - name: tabular
      model_data:
        source: archive
        path: ../build/mine/model.tar.gz
endpoint:
  type: realtime
  variants:
    - name: main
      instance_type: ml.m5.large
      initial_instance_count: 1
"""


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _package(project: Path) -> Path:
    """The tabular example with one extra artifact: an archive that differs from the repository's."""
    artifacts = project / "artifacts"
    shutil.copytree(ROOT / "model_code" / "tabular" / "artifacts", artifacts)
    (artifacts / "NOTICE.txt").write_text("the user's own archive\n")
    archive = project / "build" / "mine" / "model.tar.gz"
    subprocess.run(
        [sys.executable, "-m", "smkit.cli", "package", "--code", str(ROOT / "model_code" / "tabular" / "code"),
         "--artifacts", str(artifacts), "--include", str(ROOT / "model_code" / "shared" / "table_io.py"),
         "--output", str(archive), "--no-load-check"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return archive


def _synthesized_archive(config: Path, cwd: Path, tmp_path: Path) -> str:
    """sha256 of the model data archive ``cdk synth`` staged, run from ``cwd`` with the kit's app."""
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    app = f"{sys.executable} {ROOT / 'app.py'}"
    (cwd / "cdk.json").write_text(json.dumps({"app": app, "context": context}))
    out = tmp_path / "cdk.out"
    result = subprocess.run(
        [str(ROOT / "node_modules" / ".bin" / "cdk"), "synth", "--quiet", "--no-notices",
         "-c", f"config={config}", "--output", str(out)],
        cwd=cwd, env=_offline_env(tmp_path), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    # The archive is staged as a directory asset holding just that file (smkit/cdk/constructs/model_data.py).
    staged = list(out.glob("asset.*/model.tar.gz"))
    assert len(staged) == 1, [p.name for p in out.iterdir()]
    assert [p.name for p in staged[0].parent.iterdir()] == ["model.tar.gz"]
    return _sha256(staged[0])


def _served_archive(config: str, cwd: Path) -> str:
    """sha256 the local endpoint prints for its model data, started from ``cwd`` with a relative --config."""
    env = {**os.environ, "SMKIT_MODEL_ENVS": "false", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "smkit.cli", "local-endpoint", "--config", config, "--port", "0"],
        cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if "model data " in line and "(sha256 " in line:
                return line.rsplit("(sha256 ", 1)[1].rstrip(")\n")
        raise AssertionError(f"local-endpoint exited ({proc.wait()}) without naming its model data")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def test_synth_and_local_endpoint_resolve_a_relative_model_path_against_the_config(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    (project / "config").mkdir(parents=True)
    elsewhere.mkdir()
    archive = _package(project)
    config = project / "config" / "mine.yaml"
    config.write_text(CONFIG)

    synthesized = _synthesized_archive(config, elsewhere, tmp_path)
    served = _served_archive(os.path.relpath(config, elsewhere), elsewhere)
    assert synthesized == served == _sha256(archive)
    example = ROOT / "build" / "model.tar.gz"
    assert not example.is_file() or _sha256(example) != served
