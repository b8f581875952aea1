"""Multi-model mode: load, list, unload and invoke models by name (docs/multi-model.md).

Every worker process keeps its own copy of the models it has served; the shared
:class:`~smkit.serving.wire.registry.Registry` says which models are loaded. A model loaded through one worker
is loaded by another on its first request there. Memory: each copy's resident growth during its load is
recorded as its footprint, and ``footprint x workers`` summed over all models must stay within
``SMKIT_MME_MEMORY_BUDGET_MB``; a load that would exceed it first unloads least-recently-used models, and
only a model that cannot fit even alone is refused with 507.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, suppress
from typing import TypeVar
from urllib.parse import unquote, urlparse

from smkit.archive import ArchiveError, safe_extract
from smkit.hosting import requirements
from smkit.hosting.env import ServingEnv
from smkit.serving.wire.errors import (
    BadRequest,
    InferenceError,
    InsufficientMemory,
    ModelAlreadyLoaded,
    ModelNotFound,
)
from smkit.serving.wire.registry import LoadedModel, Registry
from smkit.serving.wire.reply import Reply
from smkit.serving.worker.handler import ModelHandler

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")
T = TypeVar("T")


def resident_bytes() -> int:
    """This process's resident set size."""
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def url_to_path(url: str) -> str:
    """``file:///x`` or ``/x`` -> ``/x``; other schemes are refused with 400."""
    parsed = urlparse(url)
    if parsed.scheme in ("", "file"):
        return unquote(parsed.path) if parsed.scheme else url
    raise BadRequest(
        f"url {url!r}: scheme {parsed.scheme!r} is not supported; use a local path or a file:// URL "
        "to a model.tar.gz or an extracted model directory"
    )


class ModelCache:
    """The per-worker side of multi-model mode.

    Args:
        env: serving environment (budget, cache setting, requirements switches).
        registry: the shared registry.
        workers: worker process count (each may hold a copy of every model).
        model_root: optional directory of ``*.tar.gz`` (``--multi-model DIR``) loaded on first invoke.
        guard: returns a context manager that bounds one invocation (the timeout).
        on_load: called when a model load starts (the worker tells the front end to allow the load's
            time limit, ``SAGEMAKER_STARTUP_TIMEOUT``, instead of the invocation's).
    """

    def __init__(
        self,
        *,
        env: ServingEnv,
        registry: Registry,
        workers: int,
        model_root: str | None = None,
        guard: Callable[[], AbstractContextManager[None]],
        on_load: Callable[[], None] | None = None,
    ) -> None:
        self.env = env
        self.registry = registry
        self.workers = max(1, workers)
        self.model_root = os.path.realpath(model_root) if model_root else None
        self.guard = guard
        self.on_load = on_load
        self.local: dict[str, ModelHandler] = {}
        self._generation = -1

    # -- bookkeeping ---------------------------------------------------------------------------------
    def sync(self) -> None:
        """Drop local copies of models another worker unloaded."""
        generation = self.registry.generation()
        if generation == self._generation:
            return
        self._generation = generation
        for name in list(self.local):
            if not self.registry.contains(name):
                self.local.pop(name).unload()

    def _resolve(self, name: str, url: str) -> tuple[str, bool]:
        path = url_to_path(url)
        if os.path.isdir(path):
            return os.path.realpath(path), False
        if not os.path.isfile(path):
            raise BadRequest(
                f"url {url!r} for model {name!r} does not exist; pass a model.tar.gz or a model directory"
            )
        dest = tempfile.mkdtemp(prefix="model-", dir=self.registry.extract_root)
        os.rmdir(dest)
        try:
            safe_extract(path, dest)
        except ArchiveError as exc:
            raise BadRequest(f"model {name!r}: {exc}") from None
        return dest, True

    def _build(self, name: str, model_dir: str) -> ModelHandler:
        extra = requirements.ensure(
            model_dir, install=self.env.install_requirements, base_dir=self.env.requirements_dir
        )
        return ModelHandler(name=name, model_dir=model_dir, env=self.env, isolated=True, extra_paths=extra)

    # -- container API -------------------------------------------------------------------------------
    def load(self, name: str, url: str) -> LoadedModel:
        """``POST /models``: 409 when loaded, 507 when it cannot fit, 500 when model_fn fails."""
        if not name or not isinstance(name, str):
            raise BadRequest('"model_name" must be a non-empty string')
        with self.registry.locked():
            if self.registry.contains(name):
                raise ModelAlreadyLoaded(f"model {name!r} is already loaded; DELETE /models/{name} first")
            model_dir, owned = self._resolve(name, url)
            if self.on_load is not None:
                self.on_load()
            try:
                before = resident_bytes()
                handler = self._build(name, model_dir)
                handler.load()
                footprint = max(0, resident_bytes() - before)
                self._make_room(name, footprint)
            except BaseException:
                if owned:
                    shutil.rmtree(model_dir, ignore_errors=True)
                raise
            entry = LoadedModel(name=name, url=url, model_dir=model_dir, owned_dir=owned, footprint=footprint)
            self.registry.put(entry)
            self.local[name] = handler
            self._generation = self.registry.generation()
            return entry

    def _make_room(self, name: str, footprint: int) -> None:
        budget = self.env.mme_memory_budget_bytes
        if footprint * self.workers > budget:
            raise InsufficientMemory(
                f"model {name!r} needs {footprint * self.workers / 2**20:.1f} MiB "
                f"({footprint / 2**20:.1f} MiB x {self.workers} workers), more than the whole "
                f"multi-model budget of {budget / 2**20:.1f} MiB; raise SMKIT_MME_MEMORY_BUDGET_MB, "
                "lower SAGEMAKER_MODEL_SERVER_WORKERS or use a larger instance"
            )
        entries = self.registry.entries()
        used = sum(e.footprint for e in entries) * self.workers
        for victim in entries:
            if used + footprint * self.workers <= budget:
                break
            self._drop(victim)
            used -= victim.footprint * self.workers

    def _drop(self, entry: LoadedModel) -> None:
        self.registry.remove(entry.name)
        handler = self.local.pop(entry.name, None)
        if handler is not None:
            handler.unload()
        if entry.owned_dir:
            shutil.rmtree(entry.model_dir, ignore_errors=True)

    def unload(self, name: str) -> None:
        """``DELETE /models/{name}``: 404 when not loaded."""
        with self.registry.locked():
            entry = self.registry.get(name)
            if entry is None:
                raise ModelNotFound(f"model {name!r} is not loaded")
            self._drop(entry)
            self._generation = self.registry.generation()

    def describe(self, name: str) -> LoadedModel:
        """``GET /models/{name}``: 404 when not loaded."""
        entry = self.registry.get(name)
        if entry is None:
            raise ModelNotFound(f"model {name!r} is not loaded")
        return entry

    def entries(self) -> list[LoadedModel]:
        """``GET /models``: loaded models by name."""
        return sorted(self.registry.entries(), key=lambda e: e.name)

    def _on_demand(self, name: str) -> str | None:
        if self.model_root is None:
            return None
        for candidate in (name, name + ".tar.gz"):
            path = os.path.realpath(os.path.join(self.model_root, candidate))
            if path.startswith(self.model_root + os.sep) and os.path.exists(path):
                return path
        return None

    def invoke(self, name: str, body: bytes, headers: Mapping[str, str]) -> Reply:
        """``POST /models/{name}/invoke``: 404 when not loaded (and not found under ``--multi-model DIR``)."""
        return self._serve(name, lambda handler: handler.invoke(body, headers))

    def invoke_batch(self, name: str, requests: Sequence[tuple[bytes, Mapping[str, str]]]) -> list[Reply]:
        """A batch of invocations of model ``name`` in one ``predict_batch_fn`` call (batching is per model)."""
        return self._serve(name, lambda handler: handler.invoke_batch(requests))

    def _serve(self, name: str, call: Callable[[ModelHandler], T]) -> T:
        self.sync()
        handler = self.local.get(name)
        if handler is None:
            handler = self._local_copy(name)
        self.registry.touch(name)
        with self.guard():
            result = call(handler)
        if not self.env.model_cache_enabled:
            with suppress(ModelNotFound):
                self.unload(name)
        return result

    def _local_copy(self, name: str) -> ModelHandler:
        entry = self.registry.get(name)
        if entry is None:
            source = self._on_demand(name)
            if source is None:
                raise ModelNotFound(f"model {name!r} is not loaded; load it with POST /models first")
            with suppress(ModelAlreadyLoaded):
                self.load(name, source)
            if name in self.local:
                return self.local[name]
            entry = self.registry.get(name)
            if entry is None:
                raise ModelNotFound(f"model {name!r} was unloaded while loading")
        handler = self._build(name, entry.model_dir)
        if self.on_load is not None:
            self.on_load()
        try:
            handler.load()
        except InferenceError:
            raise
        except Exception as exc:
            raise InferenceError(f"model {name!r} failed to load in this worker: {exc}") from exc
        self.local[name] = handler
        return handler
