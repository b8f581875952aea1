"""Serving-runtime processes: one per container per production variant, on 127.0.0.1.

Each process is ``python -m smkit.serving`` started the way the SageMaker platform starts a container
(docs/hosting-contract.md): model data extracted into its own directory, ``SAGEMAKER_BIND_TO_PORT`` set, the
container's ``Environment`` from the config, ``SAGEMAKER_MULTI_MODEL=true`` for multi-model containers.
It is ready when ``GET /ping`` answers 200. Every process runs in its own process group so that stopping it
also ends its workers; if the gateway dies without stopping them, the kernel sends SIGTERM
(``PR_SET_PDEATHSIG``) and an ``atexit`` hook ends whatever is left (:mod:`smkit.process`).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from smkit.contract import (
    BIND_TO_PORT,
    CUSTOM_ATTRIBUTES,
    DEFAULT_STARTUP_HEALTH_CHECK_S,
    INVOCATION_TIMEOUT_S,
    MODEL_SERVER_WORKERS,
    MULTI_MODEL,
    REGION,
    SMKIT_FRAMEWORK,
    SMKIT_REQUIREMENTS_DIR,
    SMKIT_WORKER_PYTHON,
    STOP_GRACE_S,
    RuntimeSettings,
)
from smkit.local.channels import local_environment
from smkit.local.sticky_sessions import RESPONSE_FIELDS
from smkit.local.upstream import Connection, Pool, UpstreamConnectError
from smkit.ops.server_process import Launch, ServerProcess
from smkit.process import HOST, runtime_command

log = logging.getLogger(__name__)
_CUSTOM_ATTRIBUTES_FIELD = CUSTOM_ATTRIBUTES.lower().encode()

# Variables a local container gets beyond its resolved Environment (smkit.config.resolved), and why each is
# needed here although the template does not carry it (tests/local/test_parity.py holds the rest equal).
LOCAL_ONLY: dict[str, str] = {
    BIND_TO_PORT: "the platform gives each container its port; locally every container gets a free one",
    MULTI_MODEL: "the platform sets SAGEMAKER_MULTI_MODEL=true in a multi-model container",
    REGION: "the region of the local endpoint (SageMaker's SDK sets it the same way in the models it creates)",
    MODEL_SERVER_WORKERS: "when the config leaves it out: the image runs one worker per vCPU of the instance "
    "(os.cpu_count() there); locally that is the instance type's vCPUs capped by the local CPUs",
    SMKIT_WORKER_PYTHON: "the model's local environment (smkit.modelenv) stands in for the image's interpreter",
    SMKIT_REQUIREMENTS_DIR: "where that environment installed code/requirements.txt (in the image: at start)",
    SMKIT_FRAMEWORK: "an AWS framework image applies its framework's default handlers itself; locally the "
    "kit's runtime does, for the image the config names",
    # AWS's vLLM image run with vLLM's CPU build (smkit.llm.engine):
    "VLLM_CPU_KVCACHE_SPACE": "vLLM's CPU build sizes its KV cache in GiB of host memory; on AWS the GPU "
    "build takes a fraction of GPU memory (SM_VLLM_GPU_MEMORY_UTILIZATION)",
    "HF_HUB_OFFLINE": "the local engine serves the config's model folder and downloads nothing from a hub",
    "SAGEMAKER_MODEL_PATH": "the folder of the custom handler file (model.py): the model folder, which is "
    "/opt/ml/model in the image and elsewhere on this machine",
    "PYTHONPATH": "the model folder's requirements.txt, which AWS's vLLM image installs into its own Python "
    "before it starts, is a layer over the local engine's environment (smkit.llm.layer)",
}


@dataclass(frozen=True)
class ContainerLaunch:
    """What one container needs to start: its model directory (or model store) and environment."""

    name: str
    model_dir: Path
    multi_model: bool = False
    hostname: str | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    # The folder standing for /opt/ml/additional-model-data-sources (None: no channels), smkit.local.channels.
    channels_dir: Path | None = None


class ContainerStream:
    """A container's 2xx answer whose body is read as it arrives (InvokeEndpointWithResponseStream).

    ``limit_s``: the container's own invocation limit (``SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS``), which
    tells a stream the container cut at its deadline from one it cut after a handler error.
    """

    def __init__(self, connection: Connection, *, limit_s: float, started: float) -> None:
        self.connection = connection
        self.limit_s = limit_s
        self.started = started  # time.monotonic() before the request was sent
        self.on_close: list[Callable[[], None]] = []  # run once, when the stream is closed

    def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives (:class:`~smkit.local.upstream.UpstreamError` propagates: a cut-off
        body, a read timeout)."""
        return self.connection.chunks()

    def past_limit(self) -> bool:
        """True once the container's invocation limit has run out since the request was sent."""
        return time.monotonic() - self.started >= self.limit_s

    async def aclose(self) -> None:
        callbacks, self.on_close = self.on_close, []
        try:
            self.connection.release()
        finally:
            for callback in callbacks:
                callback()


@dataclass(slots=True)
class ContainerReply:
    """A container's answer, passed on (or turned into a ModelError) by the gateway; read, never changed
    (not frozen for the cost of a frozen ``__init__``, as :class:`~smkit.local.runtime_api.Invocation`).

    ``stream`` is set (and ``body`` empty) for a 2xx answer read as a stream.
    """

    status: int
    body: bytes
    content_type: str | None
    custom_attributes: str | None
    stream: ContainerStream | None = None
    # X-Amzn-SageMaker-New-Session-Id / Closed-Session-Id of the answer (smkit/local/sticky_sessions.py).
    session_headers: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True for a 2xx answer."""
        return 200 <= self.status < 300


def whole_reply(status: int, fields: list[tuple[bytes, bytes]], content: bytes) -> ContainerReply:
    """The reply of an answer read whole, from its head fields as parsed (lower-case names, bytes): its
    Content-Type, custom attributes and session fields, the first of repeated ones (as
    :class:`~smkit.local.runtime_api.Headers` keeps). One pass, nothing else decoded: this runs once per call
    the gateway relays."""
    content_type = custom = None
    sessions: dict[str, str] = {}
    for name, value in fields:
        if name == b"content-type":
            if content_type is None:
                content_type = value.decode("latin-1")
        elif name == _CUSTOM_ATTRIBUTES_FIELD:
            if custom is None:
                custom = value.decode("latin-1")
        elif name in RESPONSE_FIELDS and value:
            sessions.setdefault(RESPONSE_FIELDS[name], value.decode("latin-1"))
    # Positionally, in the fields' order (status, body, content_type, custom_attributes, stream,
    # session_headers).
    return ContainerReply(status, content, content_type, custom, None, sessions)


class ContainerProcess:
    """One running serving-runtime process and the gateway's connections to it."""

    def __init__(
        self,
        spec: ContainerLaunch,
        *,
        label: str,
        log_dir: Path | None = None,
        workers: int | None = None,
        workers_reason: str = "",
        startup_timeout_s: float = DEFAULT_STARTUP_HEALTH_CHECK_S,
        startup_limit: str = "",
        stop_grace_s: float = STOP_GRACE_S,
    ) -> None:
        self.spec = spec
        # The container's own reading of its environment: a bad value stops the start here, named.
        self.settings = RuntimeSettings.from_environment(spec.environment)
        self.label = label
        self.log_dir = log_dir
        self.workers = workers
        self.workers_reason = workers_reason
        self.startup_timeout_s = startup_timeout_s
        self.startup_limit = startup_limit  # which setting sets startup_timeout_s, for the error
        self.stop_grace_s = stop_grace_s  # SIGTERM, then SIGKILL this much later
        self.port: int | None = None
        # The model workers' interpreter (a model environment's, smkit.modelenv) and its variables.
        self.python = sys.executable
        self.extra_environment: dict[str, str] = {}
        self._server: ServerProcess | None = None
        self._pool: Pool | None = None

    @property
    def pid(self) -> int | None:
        """The process id while running, else None."""
        return self._server.pid if self._server is not None and self._server.running else None

    @property
    def running(self) -> bool:
        """True while the process lives."""
        return self._server is not None and self._server.running

    @property
    def log_path(self) -> Path | None:
        """The file its output goes to (None: inherited by the gateway's own output)."""
        return self.log_dir / f"{self.label}.log" if self.log_dir else None

    @property
    def pool(self) -> Pool:
        """The kept-alive connections to this process's port (while started)."""
        if self._pool is None:
            raise UpstreamConnectError(f"container {self.label} is not started")
        return self._pool

    def use_environment(self, python: str, environment: Mapping[str, str]) -> None:
        """Run with ``python`` (the model's environment) and these extra variables from the next start."""
        self.python = python
        self.extra_environment = dict(environment)

    def container_environment(self, port: int) -> dict[str, str]:
        """The variables this container is started with, beyond those it inherits: the resolved
        Environment (``spec.environment``; a value naming AWS's channels folder names the local one) plus the
        :data:`LOCAL_ONLY` ones."""
        env = dict(self.extra_environment)
        if self.python != sys.executable:
            env[SMKIT_WORKER_PYTHON] = (
                self.python
            )  # the front end stays here; the workers run the model's env
        # A value naming a channel's folder names it on this machine (smkit.local.channels).
        env.update(local_environment(self.spec.environment, self.spec.channels_dir))
        env[BIND_TO_PORT] = str(port)
        if self.spec.multi_model:
            env[MULTI_MODEL] = "true"
        if self.workers is not None:
            env[MODEL_SERVER_WORKERS] = str(self.workers)
        return env

    def command(self, port: int) -> list[str]:
        """The serving runtime's command line; the worker count is in :meth:`container_environment`."""
        return runtime_command(self.spec.model_dir, port=port, multi_model=self.spec.multi_model)

    def _environment(self, port: int) -> dict[str, str]:
        return {**os.environ, **self.container_environment(port)}

    async def start(self) -> None:
        """Start the process and wait until ``/ping`` answers 200 (:mod:`smkit.ops.server_process`); raise
        ProcessStartError otherwise."""
        if self.workers is not None:
            log.info("container %s: %d model workers (%s)", self.label, self.workers, self.workers_reason)
        self._server = await ServerProcess.astart(
            Launch(
                name=f"container {self.label!r}",
                command=self.command,
                environment=self._environment,
                log_path=self.log_path,
                timeout_s=self.startup_timeout_s,
                limit=self.startup_limit,
                stop_grace_s=self.stop_grace_s,
            )
        )
        self.port = self._server.port
        self._pool = Pool(HOST, self.port)

    async def stop(self) -> None:
        """SIGTERM the process group, SIGKILL it after a grace period; idempotent."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        server, self._server = self._server, None
        if server is not None:
            await server.astop()

    async def request(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        json_body: object | None = None,
        timeout_s: float = INVOCATION_TIMEOUT_S,
    ) -> ContainerReply:
        """One HTTP call to the container; transport errors propagate as
        :class:`~smkit.local.upstream.UpstreamError` (a kept-alive connection the container closed while
        idle, or a refused connection, is retried once on a new one: :mod:`smkit.local.upstream`)."""
        if json_body is not None:
            body = json.dumps(json_body).encode()
            headers = {**(headers or {}), "Content-Type": "application/json"}
        status, fields, content = await self.pool.request(
            method, path, body=body or b"", headers=headers or (), timeout_s=timeout_s
        )
        return whole_reply(status, fields, content)

    async def open_stream(
        self, path: str, *, body: bytes, headers: dict[str, str], timeout_s: float = INVOCATION_TIMEOUT_S
    ) -> ContainerReply:
        """POST and return once the head has arrived: a 2xx answer's body streams (``reply.stream``).

        ``timeout_s`` bounds the wait for the head and then each wait for more of the body. An error answer
        is read whole, as :meth:`request` reads it.
        """
        started = time.monotonic()
        conn = await self.pool.open_stream("POST", path, body=body, headers=headers, timeout_s=timeout_s)
        if not 200 <= conn.status < 300:
            try:
                content = await conn.read()
            finally:
                conn.release()
            return whole_reply(conn.status, conn.fields, content)
        head = whole_reply(conn.status, conn.fields, b"")
        stream = ContainerStream(conn, limit_s=self.invocation_limit_s, started=started)
        # A streamed answer passes on no session fields (InvokeEndpointWithResponseStream returns none).
        return ContainerReply(conn.status, b"", head.content_type, head.custom_attributes, stream=stream)

    @property
    def invocation_limit_s(self) -> float:
        """The container's ``SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS`` (else the older name, else 60 s)."""
        return self.settings.invocation_timeout_s
