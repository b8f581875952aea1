"""A model's ``code/requirements.txt``: check it is satisfied, else pip-install it before loading.

Framework images pip-install this file at container start and stop when that fails (docs/handler-semantics.md).
Here the install goes with ``pip install --target`` into a directory of its own (the model directory is
read-only on SageMaker and the image runs as a non-root user), which is then searched right after the
model's ``code/`` directory. In multi-model mode every model gets its own target directory, so two
models may pin different versions of a pure-Python package; a package another model already imported in
the same worker process is shared, as Python can hold one copy of a module name per process.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement


class RequirementsError(RuntimeError):
    """``code/requirements.txt`` is not satisfied and could not be installed."""


@dataclass(frozen=True)
class RequirementsPlan:
    """What a requirements file needs: ``unsatisfied`` lines (empty when nothing is to install)."""

    path: str
    unsatisfied: tuple[str, ...]


def requirements_file(model_dir: str) -> str | None:
    """``model_dir/code/requirements.txt`` when it exists."""
    path = os.path.join(model_dir, "code", "requirements.txt")
    return path if os.path.isfile(path) else None


def _installed(extra_paths: tuple[str, ...]) -> dict[str, str]:
    versions: dict[str, str] = {}
    for dist in metadata.distributions(path=[*extra_paths, *sys.path]):
        versions.setdefault(_canonical(dist.metadata["Name"] or ""), dist.version)
    return versions


def _satisfied(line: str, installed: dict[str, str]) -> bool:
    try:
        requirement = Requirement(line)
    except InvalidRequirement:
        return False  # options (-r, --index-url), URLs, editables: let pip decide
    if requirement.marker is not None and not requirement.marker.evaluate():
        return True
    if requirement.url:
        return False
    version = installed.get(_canonical(requirement.name))
    return version is not None and requirement.specifier.contains(version, prereleases=True)


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def plan(model_dir: str, extra_paths: tuple[str, ...] = ()) -> RequirementsPlan | None:
    """Read the model's requirements file and list the lines not met by installed distributions."""
    path = requirements_file(model_dir)
    if path is None:
        return None
    lines = []
    with open(path, encoding="utf-8") as handle:
        for raw in handle:
            line = raw.split(" #", 1)[0].strip()
            if line and not line.startswith("#"):
                lines.append(line)
    installed = _installed(extra_paths) if lines else {}
    return RequirementsPlan(path, tuple(line for line in lines if not _satisfied(line, installed)))


def target_dir(model_dir: str, base: str | None) -> str:
    """The install directory for a model's requirements: one per requirements-file content."""
    path = requirements_file(model_dir)
    digest = hashlib.sha256(Path(path).read_bytes() if path else b"").hexdigest()[:16]
    root = base or os.path.join(tempfile.gettempdir(), "smkit-requirements")
    return os.path.join(root, digest)


def ensure(model_dir: str, *, install: bool, base_dir: str | None) -> tuple[str, ...]:
    """Make the model's requirements importable; return the extra ``sys.path`` entries to use.

    Raises :class:`RequirementsError` naming the file, the unmet lines and pip's output when the
    install fails or installing is switched off (``SMKIT_INSTALL_REQUIREMENTS=false``).
    """
    target = target_dir(model_dir, base_dir)
    existing = (target,) if os.path.isdir(target) else ()
    needed = plan(model_dir, existing)
    if needed is None:
        return ()
    if not needed.unsatisfied:
        return existing
    unmet = ", ".join(needed.unsatisfied)
    if not install:
        raise RequirementsError(
            f"{needed.path}: not satisfied ({unmet}) and SMKIT_INSTALL_REQUIREMENTS=false; "
            "install them into the image or set SMKIT_INSTALL_REQUIREMENTS=true"
        )
    os.makedirs(target, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-input",
        "--target",
        target,
        "-r",
        needed.path,
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        output = (result.stderr or result.stdout).strip().splitlines()[-5:]
        raise RequirementsError(
            f"{needed.path}: pip could not install {unmet} (exit {result.returncode}): "
            + " | ".join(output)
            + "; fix the requirement line, vendor the package into the image, or make the index reachable"
        )
    return (target,)
