"""Run a TensorFlow Serving model as the SageMaker TensorFlow Serving container runs it, in one process.

Two listeners share one event loop: the container's port (``SAGEMAKER_BIND_TO_PORT``, default 8080) with
``/ping``, ``/invocations`` and ``/tfs/...`` (nginx's pass-through to TensorFlow Serving), and TensorFlow
Serving's REST port on 127.0.0.1 (``SAGEMAKER_SAFE_PORT_RANGE``'s second port as on SageMaker, else 8501,
else a free port when 8501 is taken by another local container). Handlers and model calls run on thread
pools, so a handler may call ``context.rest_uri`` on the same process. Every model is loaded before the
ports open, as the container starts nginx only once TensorFlow Serving reports the model available.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smkit.archive import ArchiveError, safe_extract
from smkit.contract import BIND_TO_PORT, DEFAULT_PORT, SAFE_PORT_RANGE
from smkit.cpus import available_cpus
from smkit.hosting.childpath import PYTHONPATH, child_path
from smkit.tfs import frontend, rest_conversion
from smkit.tfs import threads as tf_threading
from smkit.tfs.layout import CODE_DIR, INFERENCE, default_model_name, find_models
from smkit.tfs.rest import Answer, RestApi

log = logging.getLogger("smkit.tfs")
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
TFS_REST_PORT = 8501
TFS_GRPC_PORT = 9000
NOT_FOUND = Answer(404, b'{"error": "Not Found"}')
BACKLOG = 128


class StartError(RuntimeError):
    """The model cannot be served; the message says why and what to do."""


@dataclass(frozen=True)
class Ports:
    """The container port and TensorFlow Serving's REST and gRPC ports (gRPC is not served)."""

    front: int
    rest: int
    grpc: int


class TfsApp:
    """ASGI: the container's routes on the front port, the REST API on the REST port."""

    def __init__(
        self, rest: RestApi, handler: frontend.Handler | None, ports: Ports, default_model: str, threads: int
    ) -> None:
        self.rest = rest
        self.handler = handler
        self.ports = ports
        self.default_model = default_model
        self._models = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="tfs-model")
        self._handlers = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="tfs-handler")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            return
        body = bytearray()
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        method, path = scope["method"], scope["path"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if scope["server"][1] == self.ports.rest:
            answer = await self._run(self._models, self.rest.handle, method, path, bytes(body))
        else:
            answer = await self.front(method, path, headers, bytes(body))
        response_headers = [(b"content-length", str(len(answer.body)).encode())]
        if answer.status != 200 or answer.body:
            response_headers.append((b"content-type", answer.content_type.encode("latin-1")))
        await send({"type": "http.response.start", "status": answer.status, "headers": response_headers})
        await send({"type": "http.response.body", "body": answer.body})

    async def _run(self, pool: ThreadPoolExecutor, function: Callable[..., Answer], *args: Any) -> Answer:
        return await asyncio.get_running_loop().run_in_executor(pool, function, *args)

    async def front(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Answer:
        """nginx's locations: ``/ping``, ``/invocations``, ``/tfs`` (to the REST API), else 404."""
        if path.startswith("/tfs"):
            rest_path = path[4:] if path.startswith("/tfs/") else path
            return await self._run(self._models, self.rest.handle, method, rest_path, body)
        if path.startswith("/ping"):
            if self.handler is not None:
                return Answer(200, b"")
            return await self._run(self._models, rest_conversion.ping, self.rest, headers, self.default_model)
        if path.startswith("/invocations"):
            if self.handler is None:
                return await self._run(
                    self._handlers, rest_conversion.invoke, self.rest, headers, body, self.default_model
                )
            ports = (self.ports.rest, self.ports.grpc)
            return await self._run(
                self._handlers, frontend.invoke, self.handler, headers, body, ports, self.default_model
            )
        return NOT_FOUND


def rest_listener(front: int, environ: Mapping[str, str]) -> tuple[socket.socket, Ports]:
    """TensorFlow Serving's REST socket (listening; requests wait in its backlog until the models are
    loaded) and the ports, as the container picks them: ``SAGEMAKER_SAFE_PORT_RANGE``'s second port, else
    8501, else any free port (8501 taken by another local container)."""
    port_range = environ.get(SAFE_PORT_RANGE)
    if port_range:
        try:
            low, high = (int(p) for p in port_range.split("-"))
        except ValueError:
            raise StartError(
                f"SAGEMAKER_SAFE_PORT_RANGE={port_range!r} is not LOW-HIGH; use e.g. 9000-9999"
            ) from None
        if low + 2 > high:
            raise StartError(f"SAGEMAKER_SAFE_PORT_RANGE={port_range!r}: not enough ports; give at least 2")
        return _bind("127.0.0.1", low + 1, listen=True), Ports(front, low + 1, low)
    try:
        sock = _bind("127.0.0.1", TFS_REST_PORT, quiet=True, listen=True)
        return sock, Ports(front, TFS_REST_PORT, TFS_GRPC_PORT)
    except OSError:
        sock = _bind("127.0.0.1", 0, listen=True)
        port = int(sock.getsockname()[1])
        log.warning("port %d is taken; TensorFlow Serving's REST API listens on %d", TFS_REST_PORT, port)
        return sock, Ports(front, port, TFS_GRPC_PORT)


def prepare_code(model_dir: Path, install: bool, requirements_dir: str | None) -> None:
    """``code/`` and ``code/lib`` on ``sys.path``; ``code/requirements.txt`` installed unless ``lib`` exists.

    The same directories go on ``PYTHONPATH`` for any interpreter the handler starts (a subprocess, a
    ``spawn`` pool), as the serving runtime does (smkit/hosting/childpath.py).
    """
    code = model_dir / CODE_DIR
    paths = [str(code)]
    lib = code / "lib"
    if lib.is_dir():
        paths.append(str(lib))
        if (code / "requirements.txt").is_file():
            log.warning("loading modules in '%s', ignoring requirements.txt", lib)
    else:
        from smkit.hosting import requirements

        try:
            paths += requirements.ensure(str(model_dir), install=install, base_dir=requirements_dir)
        except requirements.RequirementsError as exc:
            raise StartError(str(exc)) from None
    sys.path[:0] = paths
    os.environ[PYTHONPATH] = child_path(tuple(paths), os.environ.get(PYTHONPATH))


def model_directory(source: str, scratch: str) -> Path:
    """An extracted model directory for a folder or a ``model.tar.gz``."""
    path = Path(source)
    if path.is_dir():
        return path.resolve()
    if not path.is_file():
        raise StartError(f"model {source!r}: no such file or directory; give a model.tar.gz or a folder")
    dest = Path(scratch) / "model"
    try:
        safe_extract(path, dest)
    except ArchiveError as exc:
        raise StartError(f"model {source!r}: {exc}") from None
    return dest


def _bind(host: str, port: int, *, quiet: bool = False, listen: bool = False) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        if listen:  # with SO_REUSEADDR a port is only taken once something listens on it
            sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        if quiet:
            raise
        raise StartError(
            f"cannot listen on {host}:{port} ({exc.strerror}); stop the process using it or pick another port"
        ) from None
    return sock


def build(model_dir: Path, environ: Mapping[str, str], ports: Ports, threads: int) -> TfsApp:
    """Find and load the models, import the handler: the app, ready to serve."""
    from smkit.hosting.env import ServingEnv, ServingEnvError
    from smkit.tfs.saved_models import ModelStore

    models = find_models(model_dir)
    if not models:
        raise StartError(
            f"{model_dir}: no SavedModel bundles found; export the model as <name>/<version>/saved_model.pb"
        )
    try:
        env = ServingEnv.from_environ(environ)
        tf_threads = tf_threading.plan(environ)
    except (ServingEnvError, tf_threading.ThreadSettingError) as exc:
        raise StartError(str(exc)) from None
    try:  # before the handler: its module may import TensorFlow
        tf_threading.apply(tf_threads)
    except ImportError as exc:
        raise StartError(
            f"TensorFlow is not installed ({exc}); install it with: pip install 'smkit[tensorflow]'"
        ) from None
    log.info("%s", tf_threads.describe())
    handler = None
    if (model_dir / CODE_DIR / INFERENCE).is_file():
        prepare_code(model_dir, env.install_requirements, env.requirements_dir)
        try:
            handler = frontend.load_handler(model_dir / CODE_DIR)
        except frontend.HandlerImportError as exc:
            raise StartError(str(exc)) from None
    try:
        store = ModelStore.load(models)
    except Exception as exc:  # noqa: BLE001 - a SavedModel that does not load stops the server, named
        raise StartError(f"{model_dir}: a SavedModel failed to load: {type(exc).__name__}: {exc}") from None
    default = default_model_name(models, environ)
    log.info("serving %s (default %s), REST API on 127.0.0.1:%d", store.names(), default, ports.rest)
    return TfsApp(RestApi(store), handler, ports, default, threads)


def serve(
    model: str, *, host: str = "127.0.0.1", port: int | None = None, environ: Mapping[str, str] | None = None
) -> int:
    """Serve until SIGTERM/SIGINT; return the exit status. Start-up problems print one line."""
    import uvicorn

    environ = os.environ if environ is None else environ
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    scratch = tempfile.mkdtemp(prefix="smkit-tfs-")
    sockets: list[socket.socket] = []
    try:
        # --port 0 is a free port the system picks, as for the serving runtime (smkit serve).
        front_port = port if port is not None else int(environ.get(BIND_TO_PORT, str(DEFAULT_PORT)))
        threads = max(4, 2 * available_cpus().count)
        # The container port is bound first (a taken port fails now, not after loading) and listens once
        # the models are loaded: until then connections are refused, as before the container starts nginx.
        front = _bind(host, front_port)
        sockets.append(front)
        front_port = int(front.getsockname()[1])
        rest, ports = rest_listener(front_port, environ)
        sockets.append(rest)
        app = build(model_directory(model, scratch), environ, ports, threads)
        try:
            front.listen(BACKLOG)
        except OSError as exc:
            raise StartError(
                f"cannot listen on {host}:{front_port} ({exc.strerror}); pick another port"
            ) from None
        config = uvicorn.Config(
            app, lifespan="off", log_level="warning", access_log=False, timeout_graceful_shutdown=20
        )
        uvicorn.Server(config).run(sockets=sockets)
        return 0
    except StartError as exc:
        print(f"smkit tfs: {exc}", file=sys.stderr)
        return 1
    finally:
        for sock in sockets:
            sock.close()
        shutil.rmtree(scratch, ignore_errors=True)
