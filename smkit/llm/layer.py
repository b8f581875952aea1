"""The model's own packages over the engine environment: ``requirements.txt`` of a vLLM model folder.

AWS's vLLM image installs the ``requirements.txt`` of the model artifacts before its server starts
(https://aws.github.io/deep-learning-containers/vllm/changelog/, the custom handler support of
model-hosting-container-standards). Locally the engine environment is the pinned lock
(:data:`smkit.llm.engine.ENGINE_LOCK`) and stays so: the file is resolved once for the engine's interpreter
with the lock as constraints (a package the engine holds keeps the engine's version, as pip keeps an
installed package that satisfies a requirement), and what it adds is installed into a layer of its own,
cached by content like a model layer (smkit.modelenv.modellayer, ``<cache>/models/<key>``). The package
check of ``model.py`` and the local endpoint's engine put that layer on the path; the engine environment
itself never changes. A requirement that needs another version of a package the engine pins is refused with
uv's own account of the conflict.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from packaging.version import InvalidVersion, Version

from smkit.modelenv import ImageRuntime, ModelEnvError, cache_root
from smkit.modelenv.builder import ImageLayer, ensure_writable
from smkit.modelenv.modellayer import model_layer
from smkit.requirement_lines import requirement_lines

LINKS_DIR = "requirements"


def _lock_lines(lock: Path) -> list[str]:
    return [
        line.split("#", 1)[0].strip()
        for line in lock.read_text(encoding="utf-8").splitlines()
        if line.split("#", 1)[0].strip()
    ]


@contextlib.contextmanager
def _public_constraints(lock: Path) -> Iterator[Path]:
    """The lock as uv constraints, local version labels dropped (``torch==2.13.0+cpu`` is ``torch==2.13.0``
    on the index; the engine's own build stays installed)."""
    lines = []
    for line in _lock_lines(lock):
        name, sep, version = line.partition("==")
        with contextlib.suppress(InvalidVersion):
            version = Version(version).public if sep else version
        lines.append(f"{name}{sep}{version}")
    with tempfile.TemporaryDirectory(prefix="smkit-engine-constraints-") as tmp:
        path = Path(tmp) / "constraints.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        yield path


def has_requirements(model_dir: Path, file_name: str = "requirements.txt") -> bool:
    """``model_dir/requirements.txt`` exists and names at least one package."""
    path = model_dir / file_name
    return path.is_file() and bool(requirement_lines(path.read_text(encoding="utf-8", errors="replace")))


def requirements_layer(
    model_dir: Path, *, python: str, lock: Path, python_version: str, progress: bool = True
) -> Path | None:
    """The folder holding what ``model_dir/requirements.txt`` adds to the engine environment of ``python``
    (built from ``lock``), installed on first use; None when the file names nothing.

    Cached twice, as model environments are: a link per file content and engine under
    ``<cache>/requirements/`` (no resolution when it exists), to a layer per resolved set under
    ``<cache>/models/``. Raises :class:`ModelEnvError` naming the file and uv's reason.
    """
    requirements = model_dir / "requirements.txt"
    if not has_requirements(model_dir):
        return None
    venv = Path(python).parent.parent
    lines = tuple(_lock_lines(lock))
    engine_key = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]
    digest = hashlib.sha256(requirements.read_bytes())
    digest.update(f"\0engine:{engine_key}".encode())
    links = cache_root() / LINKS_DIR
    link = links / digest.hexdigest()[:16]
    if link.is_dir():
        return link
    image = ImageLayer(venv=venv, packages=lines, key=f"engine-{engine_key}")
    with _public_constraints(lock) as constraints:
        try:
            layer = model_layer(
                model_dir,
                image,
                ImageRuntime(python=python_version, label="the vLLM engine environment"),
                progress=progress,
                requirements=requirements,
                constraints=constraints,
            )
        except ModelEnvError as exc:
            raise ModelEnvError(
                f"{requirements}: {exc}; the engine environment's packages keep their pinned versions "
                f"({lock.name}), so a requirement must accept them"
            ) from None
    ensure_writable(links)
    staged = links / f"{link.name}.{os.getpid()}.link"
    with contextlib.suppress(FileNotFoundError):
        staged.unlink()
    os.symlink(layer, staged, target_is_directory=True)
    os.replace(staged, link)
    return link
