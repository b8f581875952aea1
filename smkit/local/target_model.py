"""Multi-model routing: ``TargetModel`` names an archive under the model prefix, loaded on first use.

What the platform does on AWS (docs/multi-model.md), done here against the local prefix directory: resolve
``TargetModel`` relative to the prefix, ``POST /models {"model_name", "url"}`` to the container with the
archive's path (the runtime extracts it; 409 = already loaded), then ``POST /models/{name}/invoke``. The container unloads least-recently
used models itself; when it answers 507 (no memory) the gateway unloads its least-recently used model and
retries, and when an invoke answers 404 (unloaded meanwhile) the model is loaded again. A load that takes
longer than 60 s answers 429 ModelNotReadyException while it goes on in the background.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections import OrderedDict
from pathlib import Path, PurePosixPath

from smkit.aws.limits import TARGET_MODEL_MAX_LEN
from smkit.contract import TARGET_MODEL
from smkit.local.containers import ContainerProcess, ContainerReply
from smkit.local.error_shapes import RuntimeApiError, model_not_ready, validation_error
from smkit.local.routers import Scope, call_container, reject_target_container
from smkit.local.runtime_api import Invocation

# A load that takes longer answers 429 and continues (docs/multi-model.md).
LOAD_WAIT_S = 60.0


def model_name_for(target: str) -> str:
    """A container-safe model name for a TargetModel key (stable, readable, collision-free)."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", target.removesuffix(".tar.gz")).strip("-")[:48] or "model"
    return f"{slug}-{hashlib.sha1(target.encode()).hexdigest()[:8]}"


class MultiModel:
    """The multi-model container of one variant and the platform's bookkeeping of what it loaded."""

    source = "model"

    def __init__(
        self,
        process: ContainerProcess,
        *,
        prefix: Path,
        endpoint: str,
        cache_enabled: bool = True,
    ) -> None:
        self.process = process
        self.prefix = prefix
        self.cache_enabled = cache_enabled
        self._endpoint = endpoint
        self._loaded: OrderedDict[str, str] = OrderedDict()  # TargetModel -> model name, LRU first
        self._loading: dict[str, asyncio.Task[str]] = {}
        self.loads = 0

    @property
    def loaded(self) -> list[str]:
        """TargetModel keys the gateway believes are loaded, least recently used first."""
        return list(self._loaded)

    def validate(self, invocation: Invocation) -> None:
        reject_target_container(invocation, self._endpoint)
        if invocation.stream:
            raise validation_error(
                f"Endpoint {self._endpoint} is a multi-model endpoint and InvokeEndpointWithResponseStream has no "
                "TargetModel: multi-model endpoints cannot stream. Call invoke_endpoint with TargetModel."
            )
        self.resolve(invocation.target_model)

    def resolve(self, target: str | None) -> Path:
        """The archive a TargetModel key names, or a ValidationError saying what is wrong."""
        if target is None or not target.strip():
            raise validation_error(
                f"Endpoint {self._endpoint} is a multi-model endpoint: set TargetModel ({TARGET_MODEL}) to an "
                f"archive under the model prefix, e.g. {self._example()!r}."
            )
        rel = PurePosixPath(target)
        if len(target) > TARGET_MODEL_MAX_LEN or rel.is_absolute() or ".." in rel.parts:
            raise validation_error(
                f"TargetModel {target!r} must be a key relative to the model prefix (no leading '/', no '..'), "
                f"e.g. {self._example()!r}."
            )
        archive = self.prefix.joinpath(*rel.parts)
        if not archive.is_file():
            raise validation_error(
                f"Failed to download model data (prefix: {self.prefix}, key: {target}). Please ensure that "
                f"there is an object located at the URL; available: {', '.join(self._available()) or 'none'}."
            )
        return archive

    def _available(self) -> list[str]:
        return sorted(p.relative_to(self.prefix).as_posix() for p in self.prefix.rglob("*.tar.gz"))

    def _example(self) -> str:
        available = self._available()
        return available[0] if available else "model.tar.gz"

    async def invoke(self, invocation: Invocation, scope: Scope) -> ContainerReply:
        target = invocation.target_model
        archive = self.resolve(target)
        assert target is not None
        headers = invocation.container_headers(content_type=invocation.content_type, accept=invocation.accept)
        headers[TARGET_MODEL] = target
        name = await self._ensure_loaded(target, archive, scope)
        path = f"/models/{name}/invoke"
        try:
            reply = await call_container(
                self.process, path, invocation.body, headers, scope=scope, source=self.source
            )
        except RuntimeApiError as err:
            # 404 from invoke: the container unloaded the model meanwhile (its own LRU); load it again.
            if err.fields.get("OriginalStatusCode") != 404 or await self._is_loaded(name):
                raise
            self._loaded.pop(target, None)
            name = await self._ensure_loaded(target, archive, scope)
            reply = await call_container(
                self.process,
                f"/models/{name}/invoke",
                invocation.body,
                headers,
                scope=scope,
                source=self.source,
            )
        if not self.cache_enabled:
            await self._unload(target)
        return reply

    async def _is_loaded(self, name: str) -> bool:
        reply = await self.process.request("GET", f"/models/{name}")
        return reply.status != 404

    async def _ensure_loaded(self, target: str, archive: Path, scope: Scope) -> str:
        if target in self._loaded:
            self._loaded.move_to_end(target)
            return self._loaded[target]
        task = self._loading.get(target)
        if task is None:
            task = asyncio.create_task(self._load(target, archive, scope))
            self._loading[target] = task
            task.add_done_callback(lambda _t: self._loading.pop(target, None))
        try:
            return await asyncio.wait_for(asyncio.shield(task), LOAD_WAIT_S)
        except TimeoutError:
            raise model_not_ready(
                f"Model {target} is still loading on endpoint {self._endpoint}; retry shortly."
            ) from None

    async def _load(self, target: str, archive: Path, scope: Scope) -> str:
        name = model_name_for(target)
        url = str(archive.resolve())
        while True:
            reply = await self.process.request("POST", "/models", json_body={"model_name": name, "url": url})
            if reply.ok or reply.status == 409:
                break
            if reply.status == 507 and self._loaded:
                await self._unload(next(iter(self._loaded)))
                continue
            raise scope.container_error(reply, source=self.source, process=self.process)
        self.loads += 1
        self._loaded[target] = name
        return name

    async def _unload(self, target: str) -> None:
        name = self._loaded.pop(target, None)
        if name is not None:
            await self.process.request("DELETE", f"/models/{name}")

    def forget(self) -> None:
        """Drop the bookkeeping (the container process was restarted)."""
        self._loaded.clear()
