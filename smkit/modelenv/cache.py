"""What the smkit cache holds, how big each part is, and pruning it (``smkit cache list`` / ``prune``).

The cache (:func:`smkit.modelenv.builder.cache_root`) holds four kinds of entries:

- ``envs/<key>``: image layers (a venv each), complete when they hold ``.smkit-complete``;
- ``models/<key>``: model layers, complete when they hold ``.smkit-complete``;
- ``requirements/<key>``: links from a model's content to its model layer (what the serving runtime finds);
- ``wheels/<key>``: wheels ``smkit package`` downloaded to vendor, complete when they hold ``.complete``.

A folder without its completion record is what a killed build left: it is never used, and ``prune``
always removes it (unless a build holds its lock right now), as it removes links whose layer is gone.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from smkit.modelenv.builder import COMPLETE

WHEELS_COMPLETE = ".complete"  # smkit.packaging.vendor's record
DOWNLOAD_S = 3600.0
KINDS = {"envs": "image", "models": "model", "requirements": "link", "wheels": "wheels"}


@dataclass(frozen=True)
class Entry:
    """One cache entry: its kind, folder, size on disk, last use (seconds since the epoch) and state."""

    kind: str
    path: Path
    size: int
    last_used: float
    state: str  # "ok", "half-built" or "dangling"


def _size(path: Path) -> int:
    """Bytes of the files under ``path``, each hard-linked file once (uv links files from its cache)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                stat = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            if (stat.st_dev, stat.st_ino) not in seen:
                seen.add((stat.st_dev, stat.st_ino))
                total += stat.st_size
    return total


def _entry(kind: str, path: Path) -> Entry:
    if kind == "link":
        if path.is_symlink():
            ok = path.resolve().is_dir()
            return Entry(kind, path, 0, path.lstat().st_mtime, "ok" if ok else "dangling")
        return Entry(kind, path, _size(path), path.stat().st_mtime, "ok")  # an install of an older smkit
    marker = path / (WHEELS_COMPLETE if kind == "wheels" else COMPLETE)
    if marker.is_file():
        return Entry(kind, path, _size(path), marker.stat().st_mtime, "ok")
    return Entry(kind, path, _size(path), path.stat().st_mtime, "half-built")


def entries(root: Path) -> list[Entry]:
    """Every entry of the cache at ``root``, image layers first."""
    found = []
    for folder, kind in KINDS.items():
        base = root / folder
        if not base.is_dir():
            continue
        for path in sorted(base.iterdir()):
            if path.name.endswith((".lock", ".txt")) or (kind != "link" and not path.is_dir()):
                continue
            if path.name == ".uv-cache":  # the serving runtime's uv cache (smkit.hosting.requirements)
                found.append(Entry("uv", path, _size(path), path.stat().st_mtime, "ok"))
                continue
            found.append(_entry(kind, path))
    return found


@contextlib.contextmanager
def _unless_building(path: Path) -> Iterator[bool]:
    """True when no build holds ``path``'s lock (then it is held here while pruning)."""
    # A model layer's staging folder is <key>.<random>, locked by <key>.lock; an image layer by <name>.lock.
    stem = path.name.split(".")[0] if path.parent.name == "models" else path.name
    lock = path.parent / f"{stem}.lock"
    if not lock.exists():
        yield True
        return
    with open(lock, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def prune(
    root: Path, *, everything: bool = False, unused_days: float | None = None, now: float | None = None
) -> list[Entry]:
    """Remove what a killed build left, dangling links and, by choice, entries unused for ``unused_days``
    or all of them; returns what was removed. An entry a build is writing right now is left alone."""
    now = time.time() if now is None else now
    removed = []
    for entry in entries(root):
        old = unused_days is not None and now - entry.last_used > unused_days * 86400
        # A download takes no lock (smkit.packaging.vendor): its staging folder is left for an hour.
        broken = entry.state != "ok" and (entry.kind != "wheels" or now - entry.last_used > DOWNLOAD_S)
        if not (everything or old or broken):
            continue
        with _unless_building(entry.path) as free:
            if not free:
                continue
            if entry.path.is_symlink() or entry.path.is_file():
                entry.path.unlink()
            else:
                shutil.rmtree(entry.path)
            removed.append(entry)
    if everything or unused_days is not None:
        # Links to the layers just removed.
        removed += [e for e in prune(root) if e.kind == "link"] if removed else []
    return removed


def human(size: int) -> str:
    """``1.2 GiB``."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
