"""Fixtures for the serving tests: tiny models written to tmp dirs and real servers on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import serving_models
from serving_harness import Server, start_server


@pytest.fixture(scope="session")
def models(tmp_path_factory: pytest.TempPathFactory) -> serving_models.Models:
    return serving_models.write_all(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="module")
def server_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("servers")


@pytest.fixture(scope="module")
def chain_server(models: serving_models.Models, server_tmp: Path) -> Iterator[Server]:
    """Single-model server for the default chain model: 2 workers, 1 s invocation timeout."""
    server = start_server(
        server_tmp,
        ["--model", str(models.chain)],
        env={"SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS": "1"},
    )
    yield server
    server.stop()
