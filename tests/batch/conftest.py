"""Shared fixtures for batch transform tests (moto's server and ``aws``: tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from jsonl_example import BATCH_DEMO_CODE, FULL_RECORDS, SMALL_RECORDS, write_jsonl

from smkit.packaging.build import build_archive


@pytest.fixture(scope="session")
def demo_archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The JSON Lines batch example's model packaged by the project's packager (no weights: an empty artifacts folder)."""
    root = tmp_path_factory.mktemp("demo-model")
    (root / "artifacts").mkdir()
    build_archive(BATCH_DEMO_CODE, root / "artifacts", root / "model.tar.gz")
    return root / "model.tar.gz"


@pytest.fixture(scope="session")
def big_inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Full-sized inputs (over 1 MiB each) for the cases that send whole objects or MultiRecord bodies."""
    return write_jsonl(tmp_path_factory.mktemp("big") / "batch_input", FULL_RECORDS)


@pytest.fixture(scope="session")
def small_inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same shape with fewer records, for the one-request-per-record cases."""
    return write_jsonl(tmp_path_factory.mktemp("small") / "batch_input", SMALL_RECORDS)
