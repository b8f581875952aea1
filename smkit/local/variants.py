"""Production variants: instance-backed (weighted, targetable) and serverless (limits, cold starts).

docs/hosting-contract.md (payload limits, error statuses) and docs/serverless-async.md. Traffic is split by
``InitialVariantWeight`` unless ``TargetVariant`` names a variant; the answer reports
``InvokedProductionVariant``. https://docs.aws.amazon.com/sagemaker/latest/dg/model-ab-testing.html
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable, Sequence

from smkit.local.containers import ContainerProcess, ContainerReply
from smkit.local.error_shapes import RuntimeApiError, throttling, validation_error
from smkit.local.routers import Router, Scope
from smkit.local.runtime_api import Invocation
from smkit.local.sticky_sessions import StickySessions, check_session_id


class ProductionVariant:
    """An instance-backed variant: its containers start with the endpoint and stay up."""

    def __init__(
        self,
        name: str,
        *,
        weight: float,
        router: Router,
        processes: Sequence[ContainerProcess],
        payload_limit: int,
        instances: Sequence[Router] = (),
    ) -> None:
        self.name = name
        self.weight = weight
        self.router = router
        self.processes = list(processes)
        self.payload_limit = payload_limit
        self.invocations = 0
        # More than one instance (containers whose model enables stateful sessions): a session's requests
        # reach the instance that created it (smkit/local/sticky_sessions.py).
        self.instances = list(instances) or [router]
        self.sticky = StickySessions(len(self.instances))

    @property
    def warm(self) -> bool:
        """True while every container of the variant is running."""
        return all(p.running for p in self.processes)

    async def start(self) -> None:
        """Start every container of the variant (in parallel); none is left running on failure."""
        await self._start_processes()

    async def _start_processes(self) -> None:
        results = await asyncio.gather(*(p.start() for p in self.processes), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            await self.stop()
            raise errors[0]

    async def stop(self) -> None:
        """Stop every container of the variant."""
        await asyncio.gather(*(p.stop() for p in self.processes))

    async def invoke(self, invocation: Invocation, scope: Scope) -> ContainerReply:
        """Route to the containers; a response over the payload limit is the model's error."""
        self.invocations += 1
        session_id = invocation.session_id
        if session_id is None and len(self.instances) == 1:  # the usual call: no session to route by
            instance = 0
        else:
            check_session_id(session_id, stream=invocation.stream)
            instance = self.sticky.pick(session_id)
        reply = await self.instances[instance].invoke(invocation, scope)
        if reply.session_headers:
            self.sticky.record(instance, reply.session_headers)
        if len(reply.body) > self.payload_limit:  # a streamed body has no such limit
            raise RuntimeApiError(
                "ModelError",
                f"Response payload of {len(reply.body)} bytes from variant {self.name} exceeds the "
                f"{self.payload_limit}-byte limit of InvokeEndpoint; return less data or use an async endpoint.",
                OriginalStatusCode=reply.status,
                OriginalMessage=f"response of {len(reply.body)} bytes",
            )
        return reply


class ServerlessProductionVariant(ProductionVariant):
    """A serverless variant: MaxConcurrency in flight at most, cold start on first use after idle.

    With ``ProvisionedConcurrency`` the containers start with the endpoint and never go cold; without it
    they start on the first call (the call waits) and stop after ``idle_seconds`` without traffic.
    """

    def __init__(
        self,
        name: str,
        *,
        router: Router,
        processes: Sequence[ContainerProcess],
        max_concurrency: int,
        provisioned_concurrency: int | None,
        idle_seconds: float,
        payload_limit: int,
    ) -> None:
        super().__init__(name, weight=1.0, router=router, processes=processes, payload_limit=payload_limit)
        self.max_concurrency = max_concurrency
        self.provisioned_concurrency = provisioned_concurrency
        self.idle_seconds = idle_seconds
        self.in_flight = 0
        self.cold_starts = 0
        self.on_setup: Callable[[str, float], None] | None = None
        self._last_used = time.monotonic()
        self._lock = asyncio.Lock()
        self._reaper: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Provisioned concurrency: start warm. Otherwise start the idle reaper; containers start on first use."""
        if self.provisioned_concurrency:
            await self._start_processes()
        else:
            self._reaper = asyncio.create_task(self._reap())

    async def stop(self) -> None:
        """Stop the reaper and the containers."""
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        await super().stop()

    async def invoke(self, invocation: Invocation, scope: Scope) -> ContainerReply:
        """ThrottlingException beyond MaxConcurrency; otherwise warm up if cold and invoke."""
        if self.in_flight >= self.max_concurrency:
            raise throttling(
                f"Rate exceeded: serverless endpoint {scope.endpoint} already has MaxConcurrency="
                f"{self.max_concurrency} invocations in flight; retry with backoff or raise max_concurrency."
            )
        self.in_flight += 1
        try:
            await self._ensure_warm()
            reply = await super().invoke(invocation, scope)
        except BaseException:
            self._release()
            raise
        if reply.stream is not None:
            reply.stream.on_close.append(self._release)  # a stream holds its concurrency until it ends
        else:
            self._release()
        return reply

    def _release(self) -> None:
        self.in_flight -= 1
        self._last_used = time.monotonic()

    async def _ensure_warm(self) -> None:
        async with self._lock:
            if not self.warm:
                self.cold_starts += 1
                started = time.perf_counter()
                await self._start_processes()
                if self.on_setup is not None:  # ModelSetupTime (smkit/local/cloudwatch.py)
                    self.on_setup(self.name, (time.perf_counter() - started) * 1e6)

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(min(self.idle_seconds / 2, 1.0))
            idle = time.monotonic() - self._last_used
            if self.in_flight == 0 and idle >= self.idle_seconds and self.warm:
                async with self._lock:
                    if self.in_flight == 0:
                        await super().stop()


def session_variant(
    variants: Sequence[ProductionVariant], session_id: str | None
) -> ProductionVariant | None:
    """The variant holding the live session ``session_id``, or None (any variant may take the request)."""
    if session_id is None:
        return None
    for variant in variants:
        if variant.sticky.holds(session_id):
            return variant
    return None


def choose_variant(
    variants: Sequence[ProductionVariant], target: str | None, rng: random.Random, *, endpoint: str
) -> ProductionVariant:
    """TargetVariant if given (ValidationError when unknown), else a weighted random pick."""
    if target is not None:
        for variant in variants:
            if variant.name == target:
                return variant
        names = ", ".join(v.name for v in variants)
        raise validation_error(
            f"TargetVariant {target!r} is not a production variant of endpoint {endpoint}; use one of: {names}."
        )
    if len(variants) == 1:
        return variants[0]
    return rng.choices(list(variants), weights=[v.weight for v in variants])[0]
