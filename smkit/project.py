"""The layout of a project made by ``smkit init``, and whether an archive is older than its sources.

A project folder holds ``config/NAME.yaml``, ``model_code/NAME/`` (``code/``, ``artifacts/``, ``samples/``,
``train.py``, ``samples_io.py``) and what ``smkit package`` writes from them, for each kind of local model data:

- ``source: archive``, ``path: <project>/build/NAME/model.tar.gz``: the archive of ``model_code/NAME``;
- ``source: prefix``, ``path: <project>/build/NAME/model``: the same tree uncompressed (S3Prefix);
- ``source: multi-model``, ``path: <project>/build/SET``: ``SET/NAME.tar.gz`` is the archive of
  ``model_code/NAME`` for each NAME the config lists in ``model_data.models`` (``smkit init NAME --multi-model
  SET`` adds it) and each whose archive was put there otherwise;
- an adapter component's ``artifact_path`` (a local folder, anywhere): ``<project>/build/CONFIG/adapters/
  COMPONENT.tar.gz`` is its archive (``smkit.config.resolved.paths.adapter_archive``);
- a channel of ``additional_model_data`` with ``source: archive`` and a local folder: ``<project>/build/CONFIG/
  channels/CONTAINER/CHANNEL.tar.gz`` is its archive (``smkit.config.resolved.paths.channel_archive``).

Each build records its inputs (name, size, mtime of every file under ``code/`` and ``artifacts/``, plus
the settings that shape the archive) beside what it wrote, so ``smkit package --config``, ``smkit synth``,
``smkit deploy`` and ``smkit local-endpoint`` can tell, naming the file, when model data no longer matches
its sources.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from smkit.config.resolved import ResolvedDeployment

ARCHIVE_NAME = "model.tar.gz"
# Beside the archive; hidden, so an archive or prefix asset never uploads it.
STAMP_NAME = ".model.tar.gz.inputs.json"
# Kinds whose whole folder is archived as it is (no code/, no handler check): an adapter component's weights,
# a channel's folder (additional_model_data with source: archive).
FOLDER_KINDS = ("adapter", "channel")
PREFIX_NAME = "model"  # build/NAME/model: the uncompressed tree of model_code/NAME
_SKIPPED_PARTS = ("__pycache__",)


@dataclass(frozen=True)
class ProjectModel:
    """One piece of model data of a config and the ``model_code`` folder it is built from.

    ``archive``: what is written (an archive file, or the folder of an uncompressed prefix); ``kind``:
    ``archive``, ``prefix``, ``member`` (an archive of a multi-model set) or ``adapter`` (the archive of an
    adapter's folder ``model_dir``; ``containers`` then names the component).
    """

    name: str
    model_dir: Path
    archive: Path
    containers: tuple[str, ...]
    kind: str = "archive"

    @property
    def stamp(self) -> Path:
        """The record of the last build, beside what it wrote (hidden: no asset uploads it)."""
        return self.archive.parent / f".{self.archive.name}.inputs.json"

    def exists(self) -> bool:
        """Whether the model data was written (a prefix: a folder holding ``code/``)."""
        if self.kind == "prefix":
            return (self.archive / "code").is_dir()
        return self.archive.is_file()

    def inputs(self) -> dict[str, list[int]]:
        """``code/...`` or ``artifacts/...`` -> [size, mtime_ns] of every source file."""
        folders = (
            [self.model_dir]
            if self.kind in FOLDER_KINDS
            else [self.model_dir / f for f in ("code", "artifacts")]
        )
        return inputs_of(self.model_dir, folders)

    @property
    def build_record(self) -> BuildRecord:
        """The record of its last build (:class:`BuildRecord`), beside what it wrote."""
        return BuildRecord(self.archive, self.stamp, self.model_dir)

    def record(self, settings: Mapping[str, object]) -> None:
        """Write the stamp of a build that just finished from the current inputs."""
        self.build_record.record(self.inputs(), settings)

    def stale(self, settings: Mapping[str, object]) -> str | None:
        """Why the archive must be built again (naming the file or setting), or None when it is current."""
        if not self.exists():
            return f"{self.archive} does not exist yet"
        return self.build_record.stale(self.inputs(), settings)


def inputs_of(base: Path, sources: Sequence[Path]) -> dict[str, list[int]]:
    """Name (relative to ``base``) -> [size, mtime_ns] of every file of ``sources`` (folders, walked, and
    single files); what a :class:`BuildRecord` keeps."""
    found: dict[str, list[int]] = {}
    for source in sources:
        files = [source] if source.is_file() else sorted(source.rglob("*")) if source.is_dir() else []
        for path in files:
            if path.is_file() and not any(part in _SKIPPED_PARTS for part in path.parts):
                info = path.stat()
                found[path.relative_to(base).as_posix()] = [info.st_size, info.st_mtime_ns]
    return found


@dataclass(frozen=True)
class BuildRecord:
    """What one build read and how it was made, kept at ``stamp``: the one way smkit tells whether model
    data it built (``output``, a file or a folder) is stale, for ``smkit package --config`` and for the
    repository's example archives (scripts/package_models.py).

    The record holds each input file's size and mtime (:func:`inputs_of`; names relative to ``base``), the
    settings that shaped the output (image, Python, library versions, ...) and, when given, the output's
    sha256. Without a record, the output is stale only when an input is newer than it.
    """

    output: Path
    stamp: Path
    base: Path

    def record(
        self, inputs: Mapping[str, list[int]], settings: Mapping[str, object], *, sha256: str | None = None
    ) -> None:
        """Write the record of a build that just finished from ``inputs`` and ``settings``."""
        data: dict[str, object] = {"inputs": dict(inputs), "settings": dict(settings)}
        if sha256 is not None:
            data["sha256"] = sha256
        self.stamp.parent.mkdir(parents=True, exist_ok=True)
        self.stamp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")

    def stale(
        self, inputs: Mapping[str, list[int]], settings: Mapping[str, object], *, sha256: str | None = None
    ) -> str | None:
        """Why the output must be built again (naming the file or setting), or None when it is current;
        ``sha256``: the output's digest now, compared with the recorded one."""
        try:
            recorded = json.loads(self.stamp.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            built = self._built_ns()
            newer = [name for name, (_, mtime) in inputs.items() if mtime > built]
            return f"{self.base / newer[0]} is newer than {self.output}" if newer else None
        before = recorded.get("inputs") if isinstance(recorded, dict) else None
        if not isinstance(before, dict):
            return f"{self.stamp} is not a record this smkit writes"
        for name in sorted(set(before) | set(inputs)):
            if name not in inputs:
                return f"{self.base / name} was removed since {self.output} was built"
            if name not in before:
                return f"{self.base / name} was added since {self.output} was built"
            if before[name] != inputs[name]:
                return f"{self.base / name} changed since {self.output} was built"
        for key, value in settings.items():
            if recorded.get("settings", {}).get(key) != value:
                return (
                    f"{key} is now {value!r} (the archive was built with {recorded['settings'].get(key)!r})"
                )
        if sha256 is not None and recorded.get("sha256") != sha256:
            return f"{self.output} is not the file its last build wrote"
        return None

    def _built_ns(self) -> int:
        if self.output.is_file():
            return self.output.stat().st_mtime_ns
        return min((p.stat().st_mtime_ns for p in self.output.rglob("*") if p.is_file()), default=0)


def model_dir_of(archive: Path, kind: str = "archive") -> Path | None:
    """``<project>/model_code/NAME`` for ``<project>/build/NAME/model.tar.gz`` (``kind`` archive) or
    ``<project>/build/NAME/model`` (``kind`` prefix), if that folder has code/."""
    expected = PREFIX_NAME if kind == "prefix" else ARCHIVE_NAME
    if archive.name != expected or archive.parent.parent.name != "build":
        return None
    candidate = archive.parent.parent.parent / "model_code" / archive.parent.name
    return candidate if (candidate / "code").is_dir() else None


def _members(folder: Path, listed: tuple[str, ...] = ()) -> list[tuple[str, Path, Path]]:
    """(name, archive, model_code folder) of each model of a multi-model set under build/: each the config
    lists (``model_data.models``) and each ``NAME.tar.gz`` already there, that has a ``model_code/NAME``."""
    if folder.parent.name != "build":
        return []
    model_code = folder.parent.parent / "model_code"
    present = [a.name.removesuffix(".tar.gz") for a in folder.glob("*.tar.gz")] if folder.is_dir() else []
    return [
        (name, folder / f"{name}.tar.gz", model_code / name)
        for name in sorted({*listed, *present})
        if (model_code / name / "code").is_dir()
    ]


def unknown_members(deployment: ResolvedDeployment) -> list[str]:
    """Why a model a multi-model set lists (``model_data.models``) cannot be built, one sentence each."""
    problems = []
    for i, c in enumerate(deployment.containers):  # in config order
        data = c.model_data
        if data.kind != "multi-model" or data.path is None or not data.members:
            continue
        folder = data.path
        field = f"model.containers[{i}].model_data.models"
        if folder.parent.name != "build":
            problems.append(
                f"{field}: {list(data.members)}: the models are model_code/NAME folders packaged into "
                f"build/SET/NAME.tar.gz, but path is {folder}; set path to ../build/SET (relative to the config)"
            )
            continue
        model_code = folder.parent.parent / "model_code"
        problems.extend(
            f"{field}: {name!r}: {model_code / name / 'code'} does not exist; create the model with smkit init "
            f"{name} --multi-model {folder.name}, or remove it from models"
            for name in data.members
            if not (model_code / name / "code").is_dir()
        )
    return problems


def project_models(deployment: ResolvedDeployment) -> list[ProjectModel]:
    """The local model data of a deployment that comes from ``model_code`` folders."""
    found: dict[Path, ProjectModel] = {}

    def add(name: str, model_dir: Path, path: Path, container: str, kind: str) -> None:
        known = found.get(path)
        names = (*known.containers, container) if known else (container,)
        found[path] = ProjectModel(name, model_dir, path, names, kind)

    for container in deployment.containers:
        data = container.model_data
        if data.path is None or data.kind == "model-package":
            continue
        if data.kind == "multi-model":
            for name, archive, model_dir in _members(data.path, data.members):
                add(name, model_dir, archive, container.name, "member")
            continue
        source_dir = model_dir_of(data.path, data.kind)
        if source_dir is not None:
            add(data.path.parent.name, source_dir, data.path, container.name, data.kind)
    return [*found.values(), *adapter_folders(deployment), *channel_folders(deployment)]


def adapter_folders(deployment: ResolvedDeployment) -> list[ProjectModel]:
    """The adapter components of a deployment whose weights are a local folder, each with its archive."""
    spec = deployment.components
    if spec is None:
        return []
    return [
        ProjectModel(c.name, Path(c.artifact_path), spec.adapter_archives[c.name], (c.name,), "adapter")
        for c in spec.adapters
        if c.artifact_path is not None
    ]


def channel_folders(deployment: ResolvedDeployment) -> list[ProjectModel]:
    """The channels (``additional_model_data``) whose local folder is delivered as an archive, each with the
    archive ``smkit package`` writes from it (``containers`` names the container)."""
    return [
        ProjectModel(channel.name, channel.data.path, channel.archive, (container.name,), "channel")
        for container in deployment.containers
        for channel in container.channels
        if channel.archive is not None and channel.data.path is not None
    ]


def multi_model_sets(deployment: ResolvedDeployment) -> list[Path]:
    """The local multi-model folders of a deployment (for saying what a set holds, or that it holds nothing)."""
    return [
        c.model_data.path
        for c in deployment.containers
        if c.model_data.kind == "multi-model" and c.model_data.path is not None
    ]


def samples_dir(deployment: ResolvedDeployment, container: str, root: Path) -> Path:
    """The samples of a container: its archive's ``model_code/NAME/samples``, else ``root/model_code/<container>``."""
    for model in project_models(deployment):
        if model.kind not in FOLDER_KINDS and container in model.containers:
            return model.model_dir / "samples"
    return root / "model_code" / container / "samples"
