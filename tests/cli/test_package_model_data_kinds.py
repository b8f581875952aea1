"""``smkit package --config`` packages every kind of model data a config names and says what it did; an
uncompressed prefix or a multi-model archive older than its model_code sources is rebuilt or named, never
served as it is (smkit.project)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import boto3
import click
import pytest
import yaml
from click.testing import CliRunner

from smkit.cli import main
from smkit.cli.project import ensure_archives

REPO = Path(__file__).resolve().parents[2]
HANDLER = """
import json

VERSION = {version!r}

def model_fn(model_dir):
    return VERSION

def input_fn(body, content_type):
    return json.loads(body)

def predict_fn(data, model):
    return {{"version": model}}

def output_fn(prediction, accept):
    return json.dumps(prediction).encode(), "application/json"
"""


def _project(root: Path, model_data: dict[str, Any], *, multi_model: bool = False) -> Path:
    code = root / "model_code" / "echo" / "code"
    code.mkdir(parents=True)
    (code / "inference.py").write_text(HANDLER.format(version="v1"))
    (code / "requirements.txt").write_text("# nothing beyond the image\n")
    (root / "model_code" / "echo" / "artifacts").mkdir()
    (root / "model_code" / "echo" / "artifacts" / "weights.txt").write_text("w\n")
    (root / "config").mkdir()
    data = {
        "name": "echo",
        "environment": "dev",
        "image": {"source": "build", "context": str(REPO), "dockerfile": "container/Dockerfile"},
        "model": {"network_isolation": False, "containers": [{"name": "echo", "model_data": model_data}]},
        "endpoint": {
            "type": "multi-model" if multi_model else "realtime",
            "variants": [{"name": "main", "instance_type": "ml.m5.large", "initial_instance_count": 1}],
        },
    }
    config = root / "config" / "echo.yaml"
    config.write_text(yaml.safe_dump(data, sort_keys=False))
    return config


def _package(config: Path) -> str:
    result = CliRunner().invoke(main, ["package", "--config", str(config)])
    assert result.exit_code == 0, result.output
    return result.output


def _edit(handler: Path, version: str) -> None:
    handler.write_text(HANDLER.format(version=version))
    later = handler.stat().st_mtime_ns + 5 * 10**9  # newer than anything built before, whatever the clock
    os.utime(handler, ns=(later, later))


def test_a_prefix_is_packaged_reported_and_rebuilt_when_its_handler_changes(tmp_path: Path) -> None:
    config = _project(tmp_path, {"source": "prefix", "path": "../build/echo/model"})
    prefix = tmp_path / "build" / "echo" / "model"
    output = _package(config)
    assert f"packaging {tmp_path / 'model_code' / 'echo'} -> uncompressed prefix {prefix}" in output
    assert f"{prefix}/: uncompressed layout" in output
    assert "v1" in (prefix / "code" / "inference.py").read_text()
    assert f"uncompressed prefix {prefix} is up to date" in _package(config)
    handler = tmp_path / "model_code" / "echo" / "code" / "inference.py"
    _edit(handler, "v2")
    assert f"({handler} changed since {prefix} was built)" in _package(config)
    assert "v2" in (prefix / "code" / "inference.py").read_text()


def test_a_multi_model_archive_is_rebuilt_or_named_never_served_stale(tmp_path: Path) -> None:
    config = _project(tmp_path, {"source": "multi-model", "path": "../build/set"}, multi_model=True)
    empty = CliRunner().invoke(main, ["package", "--config", str(config)])
    assert "multi-model set with no model of a model_code/NAME folder" in empty.output
    assert "smkit init NAME --multi-model set" in empty.output
    member = tmp_path / "build" / "set" / "echo.tar.gz"
    model = tmp_path / "model_code" / "echo"
    built = CliRunner().invoke(
        main,
        ["package", "--code", str(model / "code"), "--artifacts", str(model / "artifacts")]
        + ["--output", str(member), "--config", str(config)],
    )
    assert built.exit_code == 0, built.output
    ensure_archives(config)  # current: nothing to do
    handler = model / "code" / "inference.py"
    _edit(handler, "v2")
    # Built by hand (no record of its inputs): before a local endpoint, synth or deploy it is named.
    with pytest.raises(
        click.ClickException, match=rf"multi-model archive {member} is stale \({handler} is newer"
    ):
        ensure_archives(config)
    # smkit package --config rebuilds it from model_code/echo and records its inputs ...
    assert f"-> multi-model archive {member} ({handler} is newer than {member})" in _package(config)
    # ... so that the next edit is rebuilt before it is served.
    _edit(handler, "v3")
    ensure_archives(config)
    assert f"multi-model archive {member} is up to date" in _package(config)


def test_the_models_a_set_lists_are_packaged_into_it(tmp_path: Path) -> None:
    config = _project(
        tmp_path, {"source": "multi-model", "path": "../build/set", "models": ["echo"]}, multi_model=True
    )
    member = tmp_path / "build" / "set" / "echo.tar.gz"
    assert f"-> multi-model archive {member} ({member} does not exist yet)" in _package(config)
    assert f"multi-model archive {member} is up to date" in _package(config)
    shutil.rmtree(
        tmp_path / "build"
    )  # a fresh clone: synth, deploy and the local endpoint build what it lists
    ensure_archives(config)
    assert f"multi-model archive {member} is up to date" in _package(config)


def test_a_listed_model_without_its_folder_is_refused_naming_the_fix(tmp_path: Path) -> None:
    config = _project(
        tmp_path,
        {"source": "multi-model", "path": "../build/set", "models": ["echo", "ghost"]},
        multi_model=True,
    )
    result = CliRunner().invoke(main, ["package", "--config", str(config)])
    assert result.exit_code == 1
    assert "model.containers[0].model_data.models: 'ghost':" in result.output
    assert f"{tmp_path / 'model_code' / 'ghost' / 'code'} does not exist" in result.output
    assert "smkit init ghost --multi-model set, or remove it from models" in result.output
    assert not (tmp_path / "build" / "set" / "echo.tar.gz").exists()  # nothing built before the refusal


def _start(config: Path, cwd: Path) -> tuple[subprocess.Popen[str], str, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "smkit.cli", "local-endpoint", "--config", str(config)]
        + ["--port", "0", "--workers", "1"],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    banner = []
    for line in proc.stderr:
        banner.append(line)
        if "Ctrl-C" in line:
            break
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    text = "".join(banner)
    found = re.search(r"on (http://127\.0\.0\.1:\d+)", text)
    assert found, text
    return proc, found.group(1), text


def _version(url: str) -> str:
    runtime = boto3.client(
        "sagemaker-runtime",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )
    resp = runtime.invoke_endpoint(EndpointName="echo", ContentType="application/json", Body=b"1")
    return str(json.loads(resp["Body"].read())["version"])


def test_restarting_the_local_endpoint_serves_the_edited_handler_of_a_prefix(tmp_path: Path) -> None:
    config = _project(tmp_path, {"source": "prefix", "path": "../build/echo/model"})
    handler = tmp_path / "model_code" / "echo" / "code" / "inference.py"
    for version in ("v1", "v2"):
        if version != "v1":
            _edit(handler, version)
        proc, url, banner = _start(config, tmp_path)
        try:
            assert _version(url) == version, banner
            if version == "v2":
                assert f"({handler} changed since" in banner
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
