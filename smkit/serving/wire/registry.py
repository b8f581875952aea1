"""The multi-model registry shared by all worker processes of one server.

Each loaded model is one small JSON file in ``<state>/models``; adding or removing one bumps a counter
in a shared memory map, which every worker reads before a request to drop models others unloaded. The file's own mtime is the model's last use, for least-recently-used eviction. Loads and
unloads take an exclusive ``flock`` so two workers never load the same name twice.
"""

from __future__ import annotations

import fcntl
import json
import mmap
import os
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from urllib.parse import quote

from smkit.object_store import atomic_write


@dataclass(frozen=True)
class LoadedModel:
    """One loaded model.

    Attributes:
        name: the model name (``model_name`` of ``POST /models``; the TargetModel).
        url: the ``url`` it was loaded from.
        model_dir: the directory it is served from.
        owned_dir: True when ``model_dir`` was extracted by the server (removed on unload).
        footprint: resident bytes one copy took when loaded.
    """

    name: str
    url: str
    model_dir: str
    owned_dir: bool
    footprint: int


class Registry:
    """File-backed registry under ``state_dir`` (created if missing)."""

    def __init__(self, state_dir: str) -> None:
        self.state_dir = state_dir
        self.models_dir = os.path.join(state_dir, "models")
        self.extract_root = os.path.join(state_dir, "extracted")
        os.makedirs(self.models_dir, exist_ok=True)
        os.makedirs(self.extract_root, exist_ok=True)
        self._lock_path = os.path.join(state_dir, "registry.lock")
        counter = os.path.join(state_dir, "generation")
        with open(counter, "a+b") as handle:
            if os.fstat(handle.fileno()).st_size < 8:
                handle.write(bytes(8))
                handle.flush()
            self._generation = mmap.mmap(handle.fileno(), 8)

    def _path(self, name: str) -> str:
        return os.path.join(self.models_dir, quote(name, safe="") + ".json")

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the registry's exclusive lock."""
        with open(self._lock_path, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def generation(self) -> int:
        """Changes whenever a model is added or removed."""
        return int(struct.unpack_from("<Q", self._generation, 0)[0])

    def _bump(self) -> None:
        struct.pack_into("<Q", self._generation, 0, self.generation() + 1)

    def get(self, name: str) -> LoadedModel | None:
        """The entry for ``name`` or None."""
        try:
            with open(self._path(name), encoding="utf-8") as handle:
                return LoadedModel(**json.load(handle))
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    def contains(self, name: str) -> bool:
        """Whether ``name`` is registered (one ``stat``)."""
        return os.path.exists(self._path(name))

    def put(self, entry: LoadedModel) -> None:
        """Register ``entry`` atomically, as just used (called under :meth:`locked`, like eviction)."""
        atomic_write(self._path(entry.name), json.dumps(asdict(entry)).encode("utf-8"))
        self.touch(entry.name)
        self._bump()

    def remove(self, name: str) -> bool:
        """Unregister ``name``; False when it was not registered."""
        try:
            os.unlink(self._path(name))
        except FileNotFoundError:
            return False
        self._bump()
        return True

    def touch(self, name: str) -> None:
        """Mark ``name`` as just used."""
        # explicit nanosecond times: the kernel's own file timestamps tick only every few milliseconds
        now = time.time_ns()
        with suppress(FileNotFoundError):
            os.utime(self._path(name), ns=(now, now))

    def entries(self) -> list[LoadedModel]:
        """All entries, least recently used first."""
        found: list[tuple[int, LoadedModel]] = []
        for file_name in os.listdir(self.models_dir):
            if not file_name.endswith(".json"):  # atomic_write's hidden .partial file of a put under way
                continue
            path = os.path.join(self.models_dir, file_name)
            try:
                used = os.stat(path).st_mtime_ns
                with open(path, encoding="utf-8") as handle:
                    found.append((used, LoadedModel(**json.load(handle))))
            except (FileNotFoundError, json.JSONDecodeError):
                continue
        found.sort(key=lambda item: (item[0], item[1].name))
        return [entry for _, entry in found]
