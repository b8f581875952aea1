"""Shadow variants: a sampled copy of each production request, answered by the shadow and captured only.

SageMaker replicates the chosen share of production requests to the shadow variant; the caller gets the
production variant's answer alone, and the shadow's answer is visible through data capture (under the
shadow's variant name) and its metrics.
https://docs.aws.amazon.com/sagemaker/latest/dg/shadow-tests.html

The copy runs on its own task after the production answer is ready, so a slow or failing shadow never
delays or changes what the caller receives.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass

from smkit.local.capture import DataCaptureWriter
from smkit.local.error_shapes import RuntimeApiError
from smkit.local.routers import Scope
from smkit.local.runtime_api import Invocation
from smkit.local.variants import ProductionVariant

log = logging.getLogger(__name__)


@dataclass
class Shadow:
    """One shadow variant and what it did with its copies."""

    variant: ProductionVariant
    sampling_percentage: int
    answered: int = 0
    failed: int = 0


class ShadowTraffic:
    """Mirrors sampled production requests to the shadow variants and captures their answers."""

    def __init__(
        self,
        shadows: Sequence[Shadow],
        *,
        capture: DataCaptureWriter | None,
        endpoint: str,
        region: str,
        rng: random.Random,
    ) -> None:
        self.shadows = list(shadows)
        self.capture = capture
        self._endpoint = endpoint
        self._region = region
        self._rng = rng
        self._pending: set[asyncio.Task[None]] = set()

    @property
    def variants(self) -> list[ProductionVariant]:
        """The shadow variants (started and stopped with the endpoint)."""
        return [s.variant for s in self.shadows]

    def shadow(self, name: str) -> Shadow:
        """The shadow variant called ``name`` (KeyError when there is none)."""
        for s in self.shadows:
            if s.variant.name == name:
                return s
        raise KeyError(name)

    def mirror(self, invocation: Invocation) -> None:
        """Send a copy of ``invocation`` to each shadow whose sample it falls in; return at once."""
        for s in self.shadows:
            if self._rng.uniform(0, 100) < s.sampling_percentage:
                task = asyncio.create_task(self._run(s, invocation))
                self._pending.add(task)
                task.add_done_callback(self._pending.discard)

    async def join(self) -> None:
        """Wait until every copy sent so far has been answered (or failed) and captured."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    async def stop(self) -> None:
        """Cancel copies still in flight."""
        for task in list(self._pending):
            task.cancel()
        await asyncio.gather(*list(self._pending), return_exceptions=True)

    async def _run(self, s: Shadow, invocation: Invocation) -> None:
        scope = Scope(endpoint=self._endpoint, variant=s.variant.name, region=self._region)
        try:
            reply = await s.variant.invoke(invocation, scope)
        except RuntimeApiError as err:
            s.failed += 1
            log.warning("shadow variant %s failed a copied request: %s", s.variant.name, err.message)
            return
        except Exception:
            s.failed += 1
            log.exception("shadow variant %s failed a copied request", s.variant.name)
            return
        if self.capture is not None:
            await asyncio.to_thread(
                self.capture.record,
                variant=s.variant.name,
                request=invocation.body,
                request_type=invocation.content_type,
                response=reply.body,
                response_type=reply.content_type,
                inference_id=invocation.inference_id,
            )
        s.answered += 1
