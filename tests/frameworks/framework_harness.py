"""Helpers for the framework tests: a framework's scaffolded requirements, and running code in its environment.

Kept out of conftest.py so test modules can import them by a name no other test folder uses.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from smkit.modelenv import ModelEnvironment
from smkit.scaffold import REQUIREMENTS


def write_requirements(model_dir: Path, framework: str) -> None:
    """``model_dir/code/requirements.txt`` with the very bytes ``smkit init --framework`` writes.

    Same bytes, same content hash: the model layer is the one the scaffolded models use.
    """
    (model_dir / "code").mkdir(parents=True, exist_ok=True)
    text = "".join(f"{line}\n" for line in REQUIREMENTS[framework])
    (model_dir / "code" / "requirements.txt").write_text(text, encoding="utf-8")


def environ_of(environment: ModelEnvironment) -> dict[str, str]:
    """This process's environment with the model layer on ``PYTHONPATH``, as ``smkit env`` runs a command."""
    paths = os.pathsep.join([*environment.extra_paths, *filter(None, [os.environ.get("PYTHONPATH")])])
    return {**os.environ, **({"PYTHONPATH": paths} if paths else {})}


def run_in(
    environment: ModelEnvironment, argv: list[str], *, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``python argv`` in the environment (its interpreter, its layers); output captured."""
    return subprocess.run(
        [environment.python, *argv],
        env=environ_of(environment),
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
