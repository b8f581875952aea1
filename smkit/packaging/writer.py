"""Stream entries once into one or more sinks: a reproducible tar.gz and/or an uncompressed folder.

Reproducibility: entries arrive sorted; every tar header has mtime 0 (fixed), uid/gid 0, empty
user/group names and a normalised mode (0644 files, 0755 directories and executables); the gzip header
carries no timestamp or name. Compression is isal's multi-threaded deflate: the file is cut into
fixed-size blocks, each compressed with the previous block as dictionary, so the bytes do not depend
on the number of threads. Memory stays flat: files are read in 1 MiB chunks.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tarfile
from pathlib import Path
from typing import IO, Protocol

from isal import igzip_threaded
from tqdm import tqdm

from smkit.archive import CHUNK, DIR_MODE, FILE_MODE
from smkit.cpus import available_cpus
from smkit.packaging.errors import PackagingError
from smkit.packaging.manifest import ManifestEntry
from smkit.packaging.tree import MANIFEST_NAME, ArchiveMember

DEFAULT_LEVEL = 2  # isal levels are 0-3; 2 gives sizes within ~1% of gzip -6 on model weights
BLOCK_SIZE = 1 << 20
PROGRESS_MIN_BYTES = 64 << 20
FIXED_MTIME = 0


def default_threads() -> int:
    """CPUs this process may use (affinity and cgroup quota, smkit.cpus)."""
    return available_cpus().count


class ArchiveSink(Protocol):
    """A destination for the entry stream."""

    def add_dir(self, name: str, mode: int) -> None: ...
    def begin_file(self, name: str, size: int, mode: int) -> None: ...
    def write(self, chunk: bytes | memoryview) -> None: ...
    def end_file(self) -> None: ...
    def close(self) -> None: ...
    def abort(self) -> None: ...


class TarGzSink:
    """Normalised ustar/pax headers into a threaded gzip stream written to ``raw``."""

    def __init__(self, raw: IO[bytes], *, threads: int, level: int, mtime: int = FIXED_MTIME) -> None:
        self._gz = igzip_threaded.open(raw, "wb", compresslevel=level, threads=threads, block_size=BLOCK_SIZE)
        self._mtime = mtime
        self._offset = 0
        self._pending = 0

    def _emit(self, data: bytes | memoryview) -> None:
        self._gz.write(data)
        self._offset += len(data)

    def _header(self, name: str, size: int, mode: int, kind: bytes) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.type, info.mtime = size, mode, kind, self._mtime
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        self._emit(info.tobuf(tarfile.PAX_FORMAT, "utf-8", "strict"))

    def add_dir(self, name: str, mode: int) -> None:
        self._header(name, 0, mode, tarfile.DIRTYPE)

    def begin_file(self, name: str, size: int, mode: int) -> None:
        self._header(name, size, mode, tarfile.REGTYPE)
        self._pending = size

    def write(self, chunk: bytes | memoryview) -> None:
        self._emit(chunk)

    def end_file(self) -> None:
        remainder = self._offset % tarfile.BLOCKSIZE
        if remainder:
            self._emit(bytes(tarfile.BLOCKSIZE - remainder))

    def close(self) -> None:
        self._emit(bytes(2 * tarfile.BLOCKSIZE))
        remainder = self._offset % tarfile.RECORDSIZE
        if remainder:
            self._emit(bytes(tarfile.RECORDSIZE - remainder))
        self._gz.close()

    def abort(self) -> None:
        """Stop the compression threads after a failure (the output is discarded by the caller)."""
        with contextlib.suppress(Exception):
            self._gz.close()


class DirSink:
    """The same tree laid out as plain files under ``root`` (for S3Prefix / CompressionType None)."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._file: IO[bytes] | None = None
        self._path: Path | None = None
        self._mode = FILE_MODE

    def add_dir(self, name: str, mode: int) -> None:
        path = self._root / name
        path.mkdir(parents=True, exist_ok=True)
        os.chmod(path, mode)

    def begin_file(self, name: str, size: int, mode: int) -> None:
        self._path, self._mode = self._root / name, mode
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self._path.open("xb")

    def write(self, chunk: bytes | memoryview) -> None:
        assert self._file is not None
        self._file.write(chunk)

    def end_file(self) -> None:
        assert self._file is not None and self._path is not None
        self._file.close()
        os.chmod(self._path, self._mode)
        self._file = None

    def close(self) -> None:
        os.chmod(self._root, DIR_MODE)

    def abort(self) -> None:
        if self._file is not None:
            self._file.close()


def _progress(total: int, enabled: bool | None, label: str) -> tqdm:
    if enabled is None:
        enabled = total >= PROGRESS_MIN_BYTES and sys.stderr.isatty()
    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=label, disable=not enabled)


def _copy(entry: ArchiveMember, sinks: list[ArchiveSink], bar: tqdm) -> ManifestEntry:
    assert entry.source is not None
    digest = hashlib.sha256()
    remaining = entry.size
    with entry.source.open("rb") as src:
        for sink in sinks:
            sink.begin_file(entry.name, entry.size, entry.mode)
        while remaining:
            chunk = src.read(min(CHUNK, remaining))
            if not chunk:
                break
            digest.update(chunk)
            for sink in sinks:
                sink.write(chunk)
            remaining -= len(chunk)
            bar.update(len(chunk))
        if remaining or src.read(1):
            raise PackagingError(
                str(entry.source),
                f"changed size while being packaged (expected {entry.size:,} bytes)",
                "wait until whatever writes it has finished, then package again",
            )
        for sink in sinks:
            sink.end_file()
    return ManifestEntry(entry.name, entry.size, digest.hexdigest())


def stream_entries(
    entries: list[ArchiveMember], sinks: list[ArchiveSink], *, progress: bool | None, label: str
) -> tuple[ManifestEntry, ...]:
    """Write every entry to every sink in order; return the manifest rows of the files."""
    total = sum(e.size for e in entries)
    rows: list[ManifestEntry] = []
    with _progress(total, progress, label) as bar:
        for entry in entries:
            if entry.is_dir:
                for sink in sinks:
                    sink.add_dir(entry.name, entry.mode)
            else:
                rows.append(_copy(entry, sinks, bar))
    return tuple(rows)


def finish(sinks: list[ArchiveSink], manifest_json: bytes) -> None:
    """Append ``smkit-manifest.json`` as the last member and close every sink."""
    for sink in sinks:
        sink.begin_file(MANIFEST_NAME, len(manifest_json), FILE_MODE)
        sink.write(manifest_json)
        sink.end_file()
        sink.close()
