"""Safe reading of model archives (``model.tar.gz``), shared by the packager and the serving runtime.

A model archive may come from anywhere, so every member is checked before anything touches the disk:
only regular files and directories are accepted; absolute names, ``..`` components, links, devices,
FIFOs and duplicate names are refused. :func:`safe_extract` writes into a temporary sibling of the
destination and renames it into place, so a refused or broken archive leaves nothing behind.

This module sits below both :mod:`smkit.packaging` and the serving runtime and imports neither.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, cast

from isal import igzip, isal_zlib

CHUNK = 1 << 20
FILE_MODE = 0o644
EXEC_MODE = 0o755
DIR_MODE = 0o755

# Why each refused member type is refused, and what to do instead.
REFUSED_TYPES: dict[bytes, str] = {
    tarfile.SYMTYPE: "a symbolic link",
    tarfile.LNKTYPE: "a hard link",
    tarfile.CHRTYPE: "a character device",
    tarfile.BLKTYPE: "a block device",
    tarfile.FIFOTYPE: "a FIFO",
    tarfile.CONTTYPE: "a contiguous file",
    tarfile.GNUTYPE_SPARSE: "a sparse file",
}


# What a damaged archive raises while it is read: truncation, bad CRC, bad deflate data, bad headers.
# (isal's stubs declare ``error`` as an instance; at run time it is the exception class.)
READ_ERRORS: tuple[type[BaseException], ...] = (
    tarfile.TarError,
    EOFError,
    OSError,
    cast("type[BaseException]", isal_zlib.error),
)


class ArchiveError(ValueError):
    """A refused input. The message names the subject (file or field), the bad value and the fix."""

    def __init__(self, subject: str, problem: str, fix: str) -> None:
        self.subject = subject
        self.problem = problem
        self.fix = fix
        super().__init__(f"{subject}: {problem}; {fix}")


@dataclass(frozen=True)
class Member:
    """One archive member that passed the checks: normalised name, kind, size, mode and (files) sha256."""

    name: str
    is_dir: bool
    size: int
    mode: int
    sha256: str | None = None


def normalise_mode(mode: int, *, is_dir: bool) -> int:
    """0755 for directories and files with an owner execute bit, 0644 for other files (no set-id bits)."""
    if is_dir:
        return DIR_MODE
    return EXEC_MODE if mode & 0o100 else FILE_MODE


def check_member_name(name: str, *, archive: str) -> str:
    """Return ``name`` without a leading ``./``, or raise :class:`ArchiveError` for unsafe names."""
    subject = f"{archive}: member {name!r}"
    if not name or "\x00" in name:
        raise ArchiveError(subject, "empty name or NUL byte", "rebuild the archive with `smkit package`")
    if name.startswith("/") or PurePosixPath(name).is_absolute():
        raise ArchiveError(
            subject, "absolute name", "store members relative to the model root (e.g. code/inference.py)"
        )
    parts = [p for p in PurePosixPath(name).parts if p != "."]
    if ".." in parts:
        raise ArchiveError(
            subject, "'..' component would escape the model directory", "store members under the model root"
        )
    if not parts:
        return "."
    return "/".join(parts)


def check_member(info: tarfile.TarInfo, *, archive: str) -> str:
    """Validate one member's name and type; return its normalised name."""
    name = check_member_name(info.name, archive=archive)
    if info.isreg() or info.isdir():
        return name
    kind = REFUSED_TYPES.get(info.type, f"an unsupported member type {info.type!r}")
    target = f" -> {info.linkname!r}" if info.issym() or info.islnk() else ""
    raise ArchiveError(
        f"{archive}: member {info.name!r}{target}",
        f"is {kind}; model archives may only hold regular files and directories",
        "replace it with a copy of the file it stands for and rebuild with `smkit package`",
    )


class _CheckedReader:
    """A member's content stream whose read errors become :class:`ArchiveError`."""

    def __init__(self, inner: IO[bytes], label: str, name: str) -> None:
        self._inner, self._label, self._name = inner, label, name

    def read(self, size: int = -1) -> bytes:
        try:
            return self._inner.read(size)
        except READ_ERRORS as exc:
            raise _damaged(self._label, exc, member=self._name) from exc


def _damaged(label: str, exc: BaseException, *, member: str | None = None) -> ArchiveError:
    where = f"{label}: member {member!r}" if member else label
    return ArchiveError(
        where,
        f"the archive is damaged or truncated ({type(exc).__name__}: {exc})",
        "rebuild it with `smkit package` or copy it again",
    )


def open_archive(path: Path) -> IO[bytes]:
    """Open a gzip-compressed (or plain) tar file for streaming reads."""
    with path.open("rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return igzip.open(path, "rb")
    return path.open("rb")


def iter_members(path: str | Path) -> Iterator[tuple[Member, _CheckedReader | None]]:
    """Stream the members of ``path`` in archive order, each checked before it is yielded.

    Files come with a reader for their content (valid until the next member is requested); directories
    with ``None``. The yielded :class:`Member` has no ``sha256``: hash while reading if needed.
    Raises :class:`ArchiveError` on the first unsafe or duplicate member, or on a corrupt stream.
    """
    path = Path(path)
    label = str(path)
    if not path.is_file():
        raise ArchiveError(label, "no such archive file", "pass the path of an existing model.tar.gz")
    seen: set[str] = set()
    try:
        with open_archive(path) as raw, tarfile.open(fileobj=raw, mode="r|") as tar:
            for info in tar:
                name = check_member(info, archive=label)
                if name in seen and not info.isdir():
                    raise ArchiveError(
                        f"{label}: member {name!r}",
                        "appears twice (a later copy would silently replace the first)",
                        "rebuild the archive with `smkit package`",
                    )
                seen.add(name)
                member = Member(
                    name=name,
                    is_dir=info.isdir(),
                    size=0 if info.isdir() else info.size,
                    mode=normalise_mode(info.mode, is_dir=info.isdir()),
                )
                content = tar.extractfile(info)
                yield member, (None if content is None else _CheckedReader(content, label, name))
    except READ_ERRORS as exc:
        raise _damaged(label, exc) from exc


def _prepare_destination(dest: Path) -> None:
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ArchiveError(
            str(dest), "destination exists and is not an empty directory", "extract into a new directory"
        )


def _write_member(root: Path, member: Member, reader: _CheckedReader | None) -> Member:
    target = root / member.name
    if reader is None:
        target.mkdir(parents=True, exist_ok=True)
        return member
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    with os.fdopen(os.open(target, flags, member.mode), "wb") as out:
        while chunk := reader.read(CHUNK):
            digest.update(chunk)
            out.write(chunk)
    os.chmod(target, member.mode)
    return Member(member.name, False, member.size, member.mode, sha256=digest.hexdigest())


def safe_extract(archive: str | Path, dest: str | Path) -> list[Member]:
    """Extract ``archive`` into ``dest`` (absent or empty) with every member checked; return the members.

    Members are written with normalised modes (0644/0755) into a temporary sibling directory that is
    renamed to ``dest`` only after the whole archive was read, so a refused archive leaves nothing.
    Each returned file member carries its sha256.
    """
    dest = Path(dest)
    _prepare_destination(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".extract", dir=dest.parent))
    members: list[Member] = []
    try:
        for member, reader in iter_members(archive):
            try:
                members.append(_write_member(staging, member, reader))
            except OSError as exc:
                raise ArchiveError(
                    f"{archive}: member {member.name!r}",
                    f"cannot be written ({exc.strerror})",
                    "free disk space, or rebuild the archive if one name is both a file and a folder",
                ) from exc
        os.chmod(staging, DIR_MODE)
        if dest.exists():
            dest.rmdir()
        staging.rename(dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return members
