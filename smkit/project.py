"""The layout of a project made by ``smkit init``, and whether an archive is older than its sources.

A project folder holds ``config/NAME.yaml``, ``model_code/NAME/`` (``code/``, ``artifacts/``, ``samples/``,
``train.py``) and the archives ``smkit package`` writes, ``build/NAME/model.tar.gz``. A container whose
``model_data.path`` is ``<project>/build/NAME/model.tar.gz`` is packaged from ``<project>/model_code/NAME``.

Each build records its inputs (name, size, mtime of every file under ``code/`` and ``artifacts/``, plus
the settings that shape the archive) beside the archive, so ``smkit synth``, ``smkit deploy`` and ``smkit
local-endpoint`` can tell, naming the file, when an archive no longer matches its sources.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from smkit.config import DeploymentConfig

ARCHIVE_NAME = "model.tar.gz"
# Beside the archive; hidden, so an archive or prefix asset never uploads it.
STAMP_NAME = ".model.tar.gz.inputs.json"
_SKIPPED_PARTS = ("__pycache__",)


@dataclass(frozen=True)
class ProjectModel:
    """One archive of a config and the ``model_code`` folder it is built from."""

    name: str
    model_dir: Path
    archive: Path
    containers: tuple[str, ...]

    @property
    def stamp(self) -> Path:
        return self.archive.parent / STAMP_NAME

    def inputs(self) -> dict[str, list[int]]:
        """``code/...`` or ``artifacts/...`` -> [size, mtime_ns] of every source file."""
        found: dict[str, list[int]] = {}
        for folder in ("code", "artifacts"):
            root = self.model_dir / folder
            for path in sorted(root.rglob("*")) if root.is_dir() else []:
                if path.is_file() and not any(part in _SKIPPED_PARTS for part in path.parts):
                    info = path.stat()
                    found[path.relative_to(self.model_dir).as_posix()] = [info.st_size, info.st_mtime_ns]
        return found

    def record(self, settings: Mapping[str, object]) -> None:
        """Write the stamp of a build that just finished from the current inputs."""
        data = {"inputs": self.inputs(), "settings": dict(settings)}
        self.stamp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")

    def stale(self, settings: Mapping[str, object]) -> str | None:
        """Why the archive must be built again (naming the file or setting), or None when it is current."""
        if not self.archive.is_file():
            return f"{self.archive} does not exist yet"
        current = self.inputs()
        try:
            recorded = json.loads(self.stamp.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            built = self.archive.stat().st_mtime_ns
            newer = [name for name, (_, mtime) in current.items() if mtime > built]
            if newer:
                return f"{self.model_dir / newer[0]} is newer than {self.archive}"
            return None
        before: dict[str, list[int]] = recorded.get("inputs", {})
        for name in sorted(set(before) | set(current)):
            if name not in current:
                return f"{self.model_dir / name} was removed since {self.archive} was built"
            if name not in before:
                return f"{self.model_dir / name} was added since {self.archive} was built"
            if before[name] != current[name]:
                return f"{self.model_dir / name} changed since {self.archive} was built"
        for key, value in settings.items():
            if recorded.get("settings", {}).get(key) != value:
                return (
                    f"{key} is now {value!r} (the archive was built with {recorded['settings'].get(key)!r})"
                )
        return None


def model_dir_of(archive: Path) -> Path | None:
    """``<project>/model_code/NAME`` for ``<project>/build/NAME/model.tar.gz``, if that folder has code/."""
    if archive.name != ARCHIVE_NAME or archive.parent.parent.name != "build":
        return None
    candidate = archive.parent.parent.parent / "model_code" / archive.parent.name
    return candidate if (candidate / "code").is_dir() else None


def project_models(config: DeploymentConfig) -> list[ProjectModel]:
    """The archives of a loaded config (absolute paths) that come from a ``model_code`` folder."""
    found: dict[Path, ProjectModel] = {}
    for container in config.model.containers:
        data = container.model_data
        if data.source != "archive" or data.path is None:
            continue
        archive = Path(data.path)
        model_dir = model_dir_of(archive)
        if model_dir is None:
            continue
        known = found.get(archive)
        names = (*known.containers, container.name) if known else (container.name,)
        found[archive] = ProjectModel(archive.parent.name, model_dir, archive, names)
    return list(found.values())


def samples_dir(config: DeploymentConfig, container: str, root: Path) -> Path:
    """The samples of a container: its archive's ``model_code/NAME/samples``, else ``root/model_code/<container>``."""
    for model in project_models(config):
        if container in model.containers:
            return model.model_dir / "samples"
    return root / "model_code" / container / "samples"
