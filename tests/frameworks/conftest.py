"""Fixtures for the framework tests: the frameworks' venv and the serving test harness."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serving"))  # serving_harness

from framework_env import ensure_env  # noqa: E402


@pytest.fixture(scope="session")
def framework_python() -> Path:
    return ensure_env()
