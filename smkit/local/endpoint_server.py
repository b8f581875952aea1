"""``LocalEndpoint``: a config's endpoint running locally behind the SageMaker Runtime API.

::

    with LocalEndpoint("config/realtime.yaml", port=0) as endpoint:
        runtime = endpoint.client()          # boto3 sagemaker-runtime client pointed at the gateway
        runtime.invoke_endpoint(EndpointName=endpoint.name, ContentType="text/csv", Body=b"...")

The gateway (:class:`smkit.local.gateway.Gateway` on the kit's HTTP/1.1 server, :mod:`smkit.http1`) runs on
its own thread and event loop; the serving-runtime processes are started and stopped from that loop, before
and after serving, so leaving the ``with`` block, an exception, or ``stop()`` ends every process it started.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import socket
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from smkit.config import DeploymentConfig, load_deployment
from smkit.config.resolved import ResolvedDeployment, resolve
from smkit.http1 import Server
from smkit.local.auth import LOCAL_KEY, Verifier, local_credentials, make_token
from smkit.local.components import create_runtime
from smkit.local.gateway import Gateway
from smkit.local.head_refusal import service_refusal
from smkit.local.runtime import LocalSettings
from smkit.model_packages import RegistryError, served_packages
from smkit.process import Stoppable

if TYPE_CHECKING:
    from typing import Self

T = TypeVar("T")
HOST = "127.0.0.1"
SHUTDOWN_GRACE_S = 5
BACKLOG = 2048


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


class LocalEndpointError(RuntimeError):
    """The local endpoint could not start (port taken, model data missing, a container failed)."""


class LocalEndpoint(Stoppable):
    """Run the endpoint a deployment config describes on 127.0.0.1.

    Args:
        config: a loaded deployment (:func:`smkit.config.load_deployment`), the path of its YAML file, or
            a validated :class:`~smkit.config.DeploymentConfig` built from data (its paths relative to
            ``settings.root``).
        port: gateway port; 0 picks a free one (see :attr:`url`).
        name: endpoint name clients pass as EndpointName (default: the config's ``name``).
        settings: local-only settings (:class:`~smkit.local.runtime.LocalSettings`); keyword ``overrides``
            replace single fields, e.g. ``LocalEndpoint(cfg, seed=7, log_dir=tmp)``.
    """

    def __init__(
        self,
        config: ResolvedDeployment | DeploymentConfig | str | Path,
        *,
        port: int = 0,
        name: str | None = None,
        settings: LocalSettings | None = None,
        **overrides: Any,
    ) -> None:
        region_given = settings is not None or "region" in overrides
        self.settings = dataclasses.replace(settings or LocalSettings(), **overrides)
        # The one place smkit.local takes a config itself: everything below reads its resolution.
        if isinstance(config, ResolvedDeployment):
            self.deployment = config
        elif isinstance(config, DeploymentConfig):
            self.deployment = resolve(config, self.settings.root)
        else:
            self.deployment = load_deployment(config)
        if (why := self.deployment.local_refusal) is not None:
            raise LocalEndpointError(f"endpoint {name or self.deployment.name} is not run locally: {why}")
        if not region_given and self.deployment.region:
            # ARNs and notifications name the config's region.
            self.settings = dataclasses.replace(self.settings, region=self.deployment.region)
        try:  # a model package runs the image and model data its registry version names
            self.deployment = served_packages(
                self.deployment, region=self.settings.region, endpoint_url=self.settings.s3_endpoint_url
            )
        except RegistryError as exc:
            raise LocalEndpointError(f"endpoint {name or self.deployment.name}: {exc}") from None
        self.runtime = create_runtime(self.deployment, name=name, settings=self.settings)
        self.requested_port = port
        self.port: int | None = None
        self._server: Server | None = None
        self._started = threading.Event()  # the gateway listens (set by its thread)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._error: BaseException | None = None
        self._starting: asyncio.Task[Any] | None = None
        self._aborted = threading.Event()

    @property
    def name(self) -> str:
        """The EndpointName clients use."""
        return self.runtime.name

    @property
    def verifies_signatures(self) -> bool:
        """True when SigV4 is checked: ``verify_signatures`` in the settings (``--verify-signatures``) or in
        the config's ``local`` section."""
        return self.settings.verify_signatures or self.deployment.local.verify_signatures

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``: pass it as ``endpoint_url`` to the sagemaker-runtime client."""
        if self.port is None:
            raise LocalEndpointError("the local endpoint is not started")
        return f"http://{HOST}:{self.port}"

    # --- lifecycle ----------------------------------------------------------------------------------

    async def _main(self, sock: socket.socket) -> None:
        """The gateway thread: start the runtime, serve until told to stop, then stop the runtime."""
        self._loop = asyncio.get_running_loop()
        self._starting = asyncio.current_task()
        if self._aborted.is_set():  # start() was interrupted before this task could be cancelled
            self._error = KeyboardInterrupt()
            return
        try:
            await self.runtime.start()
        except BaseException as exc:  # noqa: BLE001 - handed to the thread that called start()
            self._error = exc
            return
        self._starting = None
        assert self._server is not None
        try:
            sock.listen(BACKLOG)  # connections queue from now; the server accepts them once it runs
            self._started.set()
            await self._server.serve(sock)
            assert isinstance(self._server.handler, Gateway)
            await self._server.handler.cancel()
        finally:
            await self.runtime.stop()

    def _bind(self) -> socket.socket:
        # proto=IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say so; without it every
        # response waits ~40 ms for a delayed ACK (Nagle).
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, self.requested_port))
        except OSError as exc:
            sock.close()
            raise LocalEndpointError(
                f"cannot listen on {HOST}:{self.requested_port}: {exc.strerror}; pick another port (0: any free one)"
            ) from exc
        return sock

    def start(self) -> Self:
        """Start containers and gateway; return once every container answers ``/ping``."""
        self._aborted.clear()
        sock = self._bind()
        self.port = sock.getsockname()[1]
        endpoints = {self.name: self.runtime}
        verifier = Verifier(self.settings.region, local_credentials(self.settings.credentials))
        gateway = Gateway(endpoints, verifier=verifier if self.verifies_signatures else None, tokens=verifier)
        # Request heads bounded as AWS bounds them, refused in the service's shape (smkit.local.head_refusal).
        self._server = Server(gateway, refusal=service_refusal, grace_seconds=SHUTDOWN_GRACE_S)
        self._started.clear()
        self._thread = threading.Thread(
            target=self._serve, args=(sock,), name=f"gateway-{self.name}", daemon=True
        )
        try:
            self._thread.start()  # inside: a Ctrl-C while the thread starts must stop it too
            while not self._started.wait(0.05) and self._thread.is_alive():
                pass
        except BaseException:  # Ctrl-C while containers start: cancel the start-up, which stops them
            self._abort_start()
            sock.close()
            raise
        if not self._started.is_set():
            self._thread.join()
            sock.close()
            self.port = None
            raise LocalEndpointError(
                f"local endpoint {self.name} failed to start: {self._error}"
            ) from self._error
        return self

    def _abort_start(self) -> None:
        # The flag first, then the task: either _main sees the flag, or this sees its task and cancels it.
        self._aborted.set()
        loop, task = self._loop, self._starting
        if loop is not None and task is not None:
            loop.call_soon_threadsafe(task.cancel)
        self._stop_server()
        if self._thread is not None and self._thread.ident is not None:
            self._thread.join()
        self._server = self._thread = self._loop = None

    def _serve(self, sock: socket.socket) -> None:
        # uvloop when installed: the gateway's loop costs less CPU per request.
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            runner.run(self._main(sock))

    def _stop_server(self) -> None:
        server, loop = self._server, self._loop
        if server is None:
            return
        if loop is None or loop.is_closed():
            server.stop()  # not serving yet: serve() returns at once
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nothing left to stop
            loop.call_soon_threadsafe(server.stop)

    def stop(self) -> None:
        """Stop the gateway, then every container; idempotent."""
        if self._server is not None and self._thread is not None:
            self._stop_server()
            self._thread.join()
        self._server = None
        self._thread = None
        self._loop = None

    def __enter__(self) -> Self:
        return self.start()

    @property
    def serving(self) -> bool:
        """True while the gateway thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def wait(self) -> None:
        """Block until the gateway stops (the CLI's foreground mode)."""
        if self._thread is not None:
            while self._thread.is_alive():
                self._thread.join(0.5)

    # --- helpers for callers on other threads --------------------------------------------------------

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        """Run a coroutine on the gateway's event loop (where the runtime lives) and return its result."""
        if self._loop is None:
            coro.close()
            raise LocalEndpointError("the local endpoint is not started")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout_s)

    def wait_for_async(self, timeout_s: float = 60.0) -> None:
        """Wait until every queued async invocation has written its output or failure."""
        queue = self.runtime.asynchronous
        if queue is not None:
            self.run(queue.join(timeout_s), timeout_s + 5)

    def openai_base_url(self, component: str | None = None) -> str:
        """The ``base_url`` of an OpenAI client for this endpoint (or one of its inference components)."""
        target = f"/inference-components/{component}" if component else ""
        return f"{self.url}/endpoints/{self.name}{target}/openai/v1"

    def token(self, *, expires_s: int = 3600) -> str:
        """A bearer token for the OpenAI-compatible route, signed with the pair :meth:`client` uses."""
        return make_token(*LOCAL_KEY, self.settings.region, expires_s=expires_s)

    def client(self, **config: Any) -> Any:
        """A boto3 ``sagemaker-runtime`` client for this gateway (dummy credentials; no retries unless
        ``retries=`` is given in ``config``, e.g. ``client(retries={"max_attempts": 4})``)."""
        import boto3
        from botocore.config import Config

        config.setdefault("retries", {"total_max_attempts": 1})
        return boto3.client(
            "sagemaker-runtime",
            endpoint_url=self.url,
            region_name=self.settings.region,
            aws_access_key_id="local",
            aws_secret_access_key="local",
            config=Config(**config),
        )
