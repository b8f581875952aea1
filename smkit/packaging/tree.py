"""Walk the code and artifacts folders into the sorted entry list of a model archive.

Layout (docs/hosting-contract.md): the artifacts folder's content at the archive root, the code folder under
``code/``, and ``smkit-manifest.json`` last. Symlinks are followed only when they point at a file inside the
same folder; anything leaving the tree, symlinked directories, devices, FIFOs and sockets are refused.
Interpreter caches are skipped so that running the code locally does not change the archive.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from smkit.archive import normalise_mode
from smkit.packaging.errors import PackagingError

CODE_PREFIX = "code"
# Not "manifest.json": Multi Model Server (under the AWS framework images) takes any root MANIFEST.json,
# in any case, for a legacy MMS manifest and fails to start (NullPointerException in LegacyManifest.migrate).
MANIFEST_NAME = "smkit-manifest.json"
MMS_MANIFEST = "manifest.json"
# Never packaged: interpreter and notebook caches, VCS metadata (they differ between machines).
SKIPPED_DIRS = frozenset({"__pycache__", ".ipynb_checkpoints", ".git", ".mypy_cache", ".pytest_cache"})
SKIPPED_SUFFIXES = (".pyc", ".pyo")

SPECIAL_KINDS = {
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
}


@dataclass(frozen=True)
class ArchiveMember:
    """One archive member to write: name inside the archive, source on disk (files), normalised mode."""

    name: str
    source: Path | None
    mode: int
    size: int = 0

    @property
    def is_dir(self) -> bool:
        return self.source is None

    @property
    def sort_key(self) -> tuple[str, ...]:
        return PurePosixPath(self.name).parts


def _skipped(name: str) -> bool:
    return name in SKIPPED_DIRS or name.endswith(SKIPPED_SUFFIXES)


def _arcname(prefix: str, rel: str) -> str:
    return f"{prefix}/{rel}" if prefix else rel


def _resolve_link(path: Path, root: Path, label: str) -> os.stat_result:
    target = os.readlink(path)
    resolved = path.resolve()
    if not resolved.is_relative_to(root):
        raise PackagingError(
            f"{label}: symlink {path} -> {target}",
            f"points outside {root}",
            "copy the file into the folder instead of linking to it",
        )
    if not resolved.exists():
        raise PackagingError(f"{label}: symlink {path} -> {target}", "is dangling", "remove or fix it")
    if resolved.is_dir():
        raise PackagingError(
            f"{label}: symlink {path} -> {target}",
            "links a directory",
            "replace the link with the directory itself",
        )
    return resolved.stat()


def _check_name(rel: str, path: Path, label: str) -> None:
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PackagingError(
            f"{label}: {path}", "file name is not valid UTF-8", "rename it with UTF-8 characters only"
        ) from exc


def scan(root: Path, *, prefix: str, label: str) -> list[ArchiveMember]:
    """Entries for everything under ``root`` (directories included), named under ``prefix``."""
    root = root.resolve()
    entries: list[ArchiveMember] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        for name in sorted(dirnames):
            path = here / name
            if _skipped(name):
                dirnames.remove(name)
                continue
            if path.is_symlink():
                _resolve_link(path, root, label)  # always raises for a directory link
            rel = path.relative_to(root).as_posix()
            _check_name(rel, path, label)
            entries.append(ArchiveMember(_arcname(prefix, rel), None, normalise_mode(0, is_dir=True)))
        for name in sorted(filenames):
            path = here / name
            if _skipped(name):
                continue
            rel = path.relative_to(root).as_posix()
            _check_name(rel, path, label)
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                info = _resolve_link(path, root, label)
            kind = SPECIAL_KINDS.get(stat.S_IFMT(info.st_mode))
            if kind is not None:
                raise PackagingError(
                    f"{label}: {path}",
                    f"is {kind}",
                    "only regular files and directories can be packaged; remove it",
                )
            mode = normalise_mode(info.st_mode, is_dir=False)
            entries.append(ArchiveMember(_arcname(prefix, rel), path, mode, info.st_size))
    return entries


def _nested(a: Path, b: Path) -> bool:
    return a == b or a.is_relative_to(b) or b.is_relative_to(a)


def check_inputs(code_dir: Path, artifacts_dir: Path) -> None:
    """The two input folders exist, are folders and do not contain each other."""
    for path, option in ((code_dir, "code folder"), (artifacts_dir, "artifacts folder")):
        if not path.exists():
            raise PackagingError(
                f"{option} {path}", "no such directory", f"give an existing folder as the {option}"
            )
        if not path.is_dir():
            raise PackagingError(f"{option} {path}", "is not a directory", f"give a folder as the {option}")
    if _nested(code_dir.resolve(), artifacts_dir.resolve()):
        raise PackagingError(
            f"code folder {code_dir} / artifacts folder {artifacts_dir}",
            "one folder contains the other, so files would be packaged twice",
            "keep inference code and model weights in separate folders",
        )


def collect(code_dir: Path, artifacts_dir: Path) -> list[ArchiveMember]:
    """Sorted entries of the archive (without the manifest): artifacts at the root, code under code/."""
    check_inputs(code_dir, artifacts_dir)
    code = scan(code_dir, prefix=CODE_PREFIX, label="code folder")
    if not any(not e.is_dir for e in code):
        raise PackagingError(
            f"code folder {code_dir}",
            "the folder is empty",
            "put inference.py and requirements.txt (may be empty) in it",
        )
    artifacts = scan(artifacts_dir, prefix="", label="artifacts folder")
    for entry in artifacts:
        top = PurePosixPath(entry.name).parts[0]
        if top == CODE_PREFIX:
            raise PackagingError(
                f"artifacts folder {artifacts_dir / CODE_PREFIX}",
                "the artifacts folder has its own code/, which would mix with the inference code",
                "move that folder's content into the code folder",
            )
        if entry.name.lower() == MMS_MANIFEST:
            raise PackagingError(
                f"artifacts folder {artifacts_dir / entry.name}",
                "a MANIFEST.json at the archive root makes Multi Model Server (AWS framework images) fail to start",
                "rename the file (e.g. model-manifest.json) or move it into a sub-folder",
            )
        if entry.name == MANIFEST_NAME:
            raise PackagingError(
                f"artifacts folder {artifacts_dir / MANIFEST_NAME}",
                f"{MANIFEST_NAME} at the archive root is reserved for the packager's manifest",
                "rename the file or move it into a sub-folder",
            )
    code_root = ArchiveMember(CODE_PREFIX, None, normalise_mode(0, is_dir=True))
    return sorted([*artifacts, code_root, *code], key=lambda e: e.sort_key)
