"""Start a server: resolve the model source, check its requirements, then hand over to gunicorn.

Used by ``python -m smkit.serving``, ``smkit serve`` and the image's ``serve`` entry point.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from smkit.archive import ArchiveError, safe_extract
from smkit.serving import deadline, requirements
from smkit.serving.app import ServingApp, SingleModel
from smkit.serving.constant import write_constant_model
from smkit.serving.env import ServingEnv, ServingEnvError
from smkit.serving.handler import ModelHandler
from smkit.serving.multimodel import ModelCache
from smkit.serving.registry import Registry

log = logging.getLogger("smkit.serving")


class LaunchError(RuntimeError):
    """The server cannot start; the message says why and what to do."""


@dataclass(frozen=True)
class LaunchRequest:
    """What to serve and where.

    Attributes:
        model: a model.tar.gz or an extracted model directory (single-model mode); None -> ``env.model_dir``.
        multi_model: a directory of ``*.tar.gz`` models loaded on first invoke (multi-model mode).
        host / port / workers: None -> 127.0.0.1 / ``$SAGEMAKER_BIND_TO_PORT`` or 8080 / one per CPU.
        constant: serve the bare constant handler of :mod:`smkit.serving.constant` instead of a model.
    """

    model: str | None = None
    multi_model: str | None = None
    host: str = "127.0.0.1"
    port: int | None = None
    workers: int | None = None
    constant: bool = False


def resolve_model_dir(source: str, scratch: str) -> str:
    """An extracted model directory for ``source`` (a directory, or an archive extracted under scratch)."""
    path = Path(source)
    if path.is_dir():
        return str(path.resolve())
    if not path.is_file():
        raise LaunchError(
            f"--model {source!r}: no such file or directory; pass build/model.tar.gz or a folder"
        )
    dest = os.path.join(scratch, "model")
    try:
        safe_extract(path, dest)
    except ArchiveError as exc:
        raise LaunchError(f"--model {source!r}: {exc}") from None
    return dest


def _guard(env: ServingEnv) -> Callable[[], AbstractContextManager[None]]:
    seconds = env.timeout_seconds
    return lambda: deadline.deadline(seconds)


def build(request: LaunchRequest, env: ServingEnv, scratch: str) -> tuple[ServingApp, ModelHandler | None]:
    """The ASGI app (and the single-model handler to load) for ``request``."""
    workers = request.workers or env.workers or os.cpu_count() or 1
    if request.multi_model is not None or env.multi_model:
        root = request.multi_model
        if root is not None and not os.path.isdir(root):
            raise LaunchError(f"--multi-model {root!r}: not a directory; pass a folder of *.tar.gz models")
        registry = Registry(os.path.join(scratch, "mme"))
        cache = ModelCache(env=env, registry=registry, workers=workers, model_root=root, guard=_guard(env))
        return ServingApp(env=env, cache=cache, workers=workers), None
    if request.constant:
        model_dir = str(write_constant_model(os.path.join(scratch, "constant")))
    else:
        model_dir = resolve_model_dir(request.model or env.model_dir, scratch)
    try:
        extra = requirements.ensure(
            model_dir, install=env.install_requirements, base_dir=env.requirements_dir
        )
    except requirements.RequirementsError as exc:
        raise LaunchError(str(exc)) from None
    handler = ModelHandler(name="model", model_dir=model_dir, env=env, extra_paths=extra)
    return ServingApp(env=env, single=SingleModel(), workers=workers), handler


def serve(request: LaunchRequest, environ: dict[str, str] | None = None) -> int:
    """Run until SIGTERM/SIGINT; return the exit status. Start-up problems print one clear line."""
    from smkit.serving.server import GunicornServer, ServerOptions, check_port_free

    try:
        env = ServingEnv.from_environ(os.environ if environ is None else environ)
    except ServingEnvError as exc:
        print(f"smkit serving: {exc}", file=sys.stderr)
        return 2
    # SAGEMAKER_CONTAINER_LOG_LEVEL is numeric in SDK-made models ("20"); logging takes ints or level names.
    level = int(env.log_level) if env.log_level.isdigit() else env.log_level
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    scratch = tempfile.mkdtemp(prefix="smkit-serving-")
    owner = os.getpid()
    try:
        app, handler = build(request, env, scratch)
        port = request.port or env.port
        try:
            check_port_free(request.host, port)
        except OSError as exc:
            raise LaunchError(
                f"cannot listen on {request.host}:{port} ({exc.strerror}); stop the process using it "
                "or pass another --port / SAGEMAKER_BIND_TO_PORT"
            ) from None
        options = ServerOptions(
            host=request.host,
            port=port,
            workers=app.workers,
            load_after_fork=env.load_after_fork,
        )
        GunicornServer(env=env, options=options, app=app, handler=handler).run()
        return 0
    except LaunchError as exc:
        print(f"smkit serving: {exc}", file=sys.stderr)
        return 1
    finally:
        if os.getpid() == owner:
            shutil.rmtree(scratch, ignore_errors=True)
