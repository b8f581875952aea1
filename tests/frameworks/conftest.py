"""Fixtures for the framework tests: each framework's model environment, and the serving test harness.

The frameworks never enter the kit's venv. A framework's environment is the one ``smkit`` builds for a
model folder scaffolded with ``smkit init --framework NAME`` (:func:`smkit.modelenv.model_environment`:
the kit image's layer plus a model layer of the scaffold's ``code/requirements.txt``), in the product's
cache (``$SMKIT_CACHE_DIR``, else ``~/.cache/smkit``) and under its locks. Keyed by content, each layer is
built once and shared: by these tests, by the end-to-end tests that scaffold the same frameworks, by
pytest-xdist's workers and by later runs.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serving"))  # serving_harness

from framework_harness import write_requirements  # noqa: E402

from smkit.modelenv import ModelEnvironment, model_environment  # noqa: E402


@pytest.fixture(scope="session")
def framework_env(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], ModelEnvironment]:
    """``framework_env("pytorch")``: the environment of a scaffolded model of that framework."""
    built: dict[str, ModelEnvironment] = {}

    def get(framework: str) -> ModelEnvironment:
        if framework not in built:
            model_dir = tmp_path_factory.mktemp(f"{framework}-env")
            write_requirements(model_dir, framework)
            built[framework] = model_environment(model_dir, progress=False)
        return built[framework]

    return get
