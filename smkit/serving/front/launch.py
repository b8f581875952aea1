"""Start a server: resolve the model source, check its requirements, then start the front end and workers.

Used by ``python -m smkit.serving``, ``smkit serve`` and the image's ``serve`` entry point.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import smkit
from smkit import contract
from smkit.cpus import available_cpus
from smkit.hosting.env import VAR_LOAD_AFTER_FORK, ServingEnv, ServingEnvError
from smkit.serving.front import forking
from smkit.serving.front.constant import write_constant_model
from smkit.serving.front.threads import ThreadPlan, plan_threads
from smkit.serving.wire.registry import Registry

log = logging.getLogger("smkit.serving")


class LaunchError(RuntimeError):
    """The server cannot start; the message says why and what to do."""


@dataclass(frozen=True)
class LaunchRequest:
    """What to serve and where.

    Attributes:
        model: a model.tar.gz or an extracted model directory (single-model mode); None -> ``env.model_dir``.
        multi_model: a directory of ``*.tar.gz`` models loaded on first invoke (multi-model mode).
        host / port / workers: None -> 127.0.0.1 / ``$SAGEMAKER_BIND_TO_PORT`` or 8080 / one per CPU it may use (smkit/cpus.py).
        constant: serve the bare constant handler of :mod:`smkit.serving.front.constant` instead of a model.
        exit_on_load_failure: exit 1 once every worker slot has given up loading the model (``smkit serve``;
            the image keeps answering ``/ping`` 503, as SageMaker's health check expects).
    """

    model: str | None = None
    multi_model: str | None = None
    host: str = "127.0.0.1"
    port: int | None = None
    workers: int | None = None
    constant: bool = False
    exit_on_load_failure: bool = False


def resolve_model_dir(source: str, scratch: str) -> str:
    """An extracted model directory for ``source`` (a directory, or an archive extracted under scratch)."""
    path = Path(source)
    if path.is_dir():
        return str(path.resolve())
    if not path.is_file():
        raise LaunchError(
            f"--model {source!r}: no such file or directory; pass build/model.tar.gz or a folder"
        )
    from smkit.archive import ArchiveError, safe_extract  # after the worker template has started

    dest = os.path.join(scratch, "model")
    try:
        safe_extract(path, dest)
    except ArchiveError as exc:
        raise LaunchError(f"--model {source!r}: {exc}") from None
    return dest


def _worker_config(request: LaunchRequest, env: ServingEnv, scratch: str, workers: int) -> dict[str, Any]:
    """What every model worker serves (JSON for smkit/serving/worker/model_worker.py)."""
    if request.multi_model is not None or env.multi_model:
        root = request.multi_model
        if root is not None and not os.path.isdir(root):
            raise LaunchError(f"--multi-model {root!r}: not a directory; pass a folder of *.tar.gz models")
        registry = os.path.join(scratch, "mme")
        Registry(registry)  # created once here, before any worker opens it
        return {
            "mode": "multi",
            "registry_dir": registry,
            "model_root": os.path.realpath(root) if root else None,
            "workers": workers,
        }
    if request.constant:
        model_dir = str(write_constant_model(os.path.join(scratch, "constant")))
    else:
        model_dir = resolve_model_dir(request.model or env.model_dir, scratch)
    # Imported here, after the worker template has started (packaging's parser is tens of milliseconds).
    from smkit.hosting import requirements

    try:
        extra = requirements.ensure(
            model_dir,
            install=env.install_requirements,
            base_dir=env.requirements_dir,
            python=env.worker_python or sys.executable,
        )
    except requirements.RequirementsError as exc:
        raise LaunchError(str(exc)) from None
    return {"mode": "single", "model_dir": model_dir, "extra_paths": list(extra)}


def worker_environ(python: str, scratch: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The workers' environment: when they run another interpreter, smkit (only) on its PYTHONPATH.

    smkit's own directory is not added: in an installed kit it is site-packages, whose packages must
    not shadow the model environment's. A directory holding a link to the smkit package is.
    """
    result = dict(environ)
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        return result
    package = Path(smkit.__file__).resolve().parent
    link_dir = Path(scratch) / "worker-path"
    link_dir.mkdir(exist_ok=True)
    (link_dir / "smkit").symlink_to(package, target_is_directory=True)
    previous = result.get("PYTHONPATH")
    result["PYTHONPATH"] = str(link_dir) + (os.pathsep + previous if previous else "")
    return result


def listen(host: str, port: int) -> socket.socket:
    """The front end's listening socket; OSError when the address is taken."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def _check_python(python: str) -> None:
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise LaunchError(
            f"{contract.SMKIT_WORKER_PYTHON}={python!r}: no such executable; pass the python of a venv "
            "(e.g. /opt/model-env/bin/python) or unset it to use the server's own interpreter"
        )


def _log_threads(workers: int, threads: ThreadPlan, cpus: int, described: str) -> None:
    """The thread plan, as the start's log line says it (and a warning when the pools oversubscribe)."""
    log.info(
        "%d worker%s x %d thread%s: %s, threads from %s",
        workers,
        "s" if workers != 1 else "",
        threads.threads,
        "s" if threads.threads != 1 else "",
        described,
        threads.source,
    )
    if threads.oversubscribed:
        log.warning(
            "%d workers x %d threads is more than the %d CPUs: the pools will preempt each other; "
            "lower OMP_NUM_THREADS or SAGEMAKER_MODEL_SERVER_WORKERS (docs/serving-runtime.md)",
            workers,
            threads.threads,
            cpus,
        )


def serve(request: LaunchRequest, environ: dict[str, str] | None = None) -> int:
    """Run until SIGTERM/SIGINT; return the exit status. Start-up problems print one clear line."""
    try:
        env = ServingEnv.from_environ(os.environ if environ is None else environ)
    except ServingEnvError as exc:
        print(f"smkit serving: {exc}", file=sys.stderr)
        return 2
    # SAGEMAKER_CONTAINER_LOG_LEVEL is numeric in SDK-made models ("20"); logging takes ints or level names.
    level = int(env.log_level) if env.log_level.isdigit() else env.log_level
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if VAR_LOAD_AFTER_FORK in (os.environ if environ is None else environ):
        log.warning(
            "%s is ignored: every worker is a fresh process that loads the model itself "
            "(docs/serving-runtime.md)",
            VAR_LOAD_AFTER_FORK,
        )
    scratch = tempfile.mkdtemp(prefix="smkit-serving-")
    template: forking.Template | None = None
    try:
        cpus = available_cpus()
        workers = request.workers or env.workers or cpus.count
        python = env.worker_python or sys.executable
        _check_python(python)
        base = worker_environ(python, scratch, os.environ if environ is None else environ)
        threads = plan_threads(cpus.count, workers, base)
        # First, so that the template imports the workers' runtime while this process resolves the model and
        # imports its own HTTP stack: the two starts overlap on the way to the first answer.
        template = forking.start_template(python, {**base, **threads.added})
        config = _worker_config(request, env, scratch, workers)
        host, port = request.host, request.port or env.port
        try:
            sock = listen(host, port)
        except OSError as exc:
            raise LaunchError(
                f"cannot listen on {host}:{port} ({exc.strerror}); stop the process using it "
                "or pass another --port / SAGEMAKER_BIND_TO_PORT"
            ) from None
        _log_threads(workers, threads, cpus.count, cpus.describe())
        from smkit.serving.front.pool import PoolOptions, WorkerPool

        pool = WorkerPool(
            PoolOptions(
                workers=workers,
                python=python,
                config=config,
                timeout=env.timeout_seconds,
                queue_size=env.queue_size,
                retries=env.worker_retries,
                batch_size=env.batch_size,
                concurrency=env.worker_concurrency,
                template=template is not None,
                environ={**base, **threads.added},
            )
        )
        pool.launch(template)  # the workers load while the front end imports its HTTP stack
        template = None  # the pool stops it
        from smkit.serving.front.event_loop import run
        from smkit.serving.front.frontend import FrontEnd

        front = FrontEnd(env=env, pool=pool, workers=workers)
        return run(front, pool, sock, exit_on_load_failure=request.exit_on_load_failure)
    except LaunchError as exc:
        print(f"smkit serving: {exc}", file=sys.stderr)
        return 1
    finally:
        if template is not None:  # the start failed before the pool took it
            template.stop()
        shutil.rmtree(scratch, ignore_errors=True)
