"""The serving image as a Docker build context that any folder can build, and a check that a context builds.

The kit's image is ``container/Dockerfile`` with its pinned requirements (``container/requirements*.txt``,
written from uv.lock by ``make lock``), their SBOM (``container/sbom.cdx.json``, also from the lock, copied
into the image) and the runtime's source (the ``smkit`` package). A wheel of smkit carries the ``container``
files as package data (``smkit/container``); a checkout has them beside the package.
:func:`stage_kit_context` lays them out as one build context, the same files in both cases, so a config
with ``image: {source: build}`` and no ``context`` builds the kit's image from any folder.

:mod:`smkit.dockerimage.copies` checks that every ``COPY``/``ADD`` source of a Dockerfile is in a context.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import smkit

PACKAGE_DIR = Path(smkit.__file__).resolve().parent
# container/Dockerfile's build argument naming the file of ``image.requirements`` inside the context.
IMAGE_REQUIREMENTS_ARG = "IMAGE_REQUIREMENTS"
KIT_DOCKERFILE = "container/Dockerfile"
# Where a staged kit context holds the config's ``image.requirements`` file.
STAGED_REQUIREMENTS = "container/requirements-image.txt"
_CONTAINER_FILES = ("Dockerfile", "requirements.txt", "requirements-extra.txt", "sbom.cdx.json")
_SKIPPED = ("__pycache__", ".pyc", ".pyo")
# Parts of the package the image leaves out: its own files (staged under container/) and the CDK construct
# library, which the serving runtime never imports; a change to a construct does not rebuild the image.
_NOT_IN_IMAGE = ("container", "cdk")


def container_dir() -> Path:
    """The kit image's ``container`` folder: the wheel's package data, else the checkout's."""
    packaged = PACKAGE_DIR / "container"
    if (packaged / "Dockerfile").is_file():
        return packaged
    return PACKAGE_DIR.parent / "container"


@dataclass(frozen=True)
class BuildContext:
    """A Docker build: the context folder, the Dockerfile (relative to it) and build arguments."""

    directory: Path
    dockerfile: str
    build_args: dict[str, str] = field(default_factory=dict)


def kit_context_files(requirements: Path | None = None) -> dict[str, Path]:
    """Context path -> source file of the kit's image (plus ``requirements`` as the image requirements)."""
    container = container_dir()
    files = {f"container/{name}": container / name for name in _CONTAINER_FILES}
    files.update({f"container/{p.name}": p for p in sorted(container.glob("requirements-*.txt"))})
    missing = [str(path) for path in files.values() if not path.is_file()]
    if missing:
        raise FileNotFoundError(
            f"the kit's image files are missing ({', '.join(missing)}): reinstall smkit from its wheel"
        )
    for path in sorted(PACKAGE_DIR.rglob("*")):
        relative = path.relative_to(PACKAGE_DIR)
        if (
            path.is_file()
            and relative.parts[0] not in _NOT_IN_IMAGE
            and not any(part == "__pycache__" for part in relative.parts)
            and not path.name.endswith(_SKIPPED)
        ):
            files[f"smkit/{relative.as_posix()}"] = path
    if requirements is not None:
        files[STAGED_REQUIREMENTS] = requirements
    return files


def stage_kit_context(outdir: Path, requirements: Path | None = None) -> BuildContext:
    """Write the kit image's build context under ``outdir`` (content-addressed, written once).

    ``requirements``: the config's ``image.requirements`` file, copied into the context and named by the
    Dockerfile's ``IMAGE_REQUIREMENTS`` build argument.
    """
    files = kit_context_files(requirements)
    digest = hashlib.sha256()
    for name, path in sorted(files.items()):
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    target = outdir / f"smkit-image.{digest.hexdigest()[:16]}"
    build_args = {IMAGE_REQUIREMENTS_ARG: STAGED_REQUIREMENTS} if requirements is not None else {}
    if not target.is_dir():
        outdir.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".smkit-image-", dir=outdir))
        try:
            for name, path in files.items():
                destination = scratch / name
                destination.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, destination)
            os.replace(scratch, target)
        except OSError:
            shutil.rmtree(scratch, ignore_errors=True)
            if not target.is_dir():  # another process staged the same context first
                raise
    return BuildContext(target, KIT_DOCKERFILE, build_args)
