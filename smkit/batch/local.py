"""``--local``: run a transform job against the serving runtime started on 127.0.0.1.

The runtime is started the way SageMaker starts a batch container (docs/batch-transform.md):
``SAGEMAKER_BATCH=true`` plus ``SAGEMAKER_MAX_PAYLOAD_IN_MB``, ``SAGEMAKER_BATCH_STRATEGY`` and ``SAGEMAKER_MAX_CONCURRENT_TRANSFORMS``
for the values the job sets. Once ``GET /ping`` answers 200 the job asks ``GET /execution-parameters`` for
the values it left unset, runs, and the runtime is stopped (its whole process group) whatever happens.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from smkit.batch.client import ContainerClient, error_message
from smkit.batch.job import JobResult, Log, TransformRunner
from smkit.batch.options import BatchStrategy, TransformOptions, resolve, validate
from smkit.batch.storage import check_separate, list_inputs, open_sink
from smkit.config import ImageSource

HOST = "127.0.0.1"
DEFAULT_STARTUP_TIMEOUT_S = 120.0
PING_TIMEOUT_S = 2.0  # GET /ping must answer within 2 s (docs/hosting-contract.md)
STOP_GRACE_S = 10.0
LOG_TAIL_LINES = 20
LOAD_FAILED = "failed to load"  # the runtime's /ping message after model_fn raised
_PR_SET_PDEATHSIG = 1


class RuntimeStartError(RuntimeError):
    """The serving runtime exited or never answered ``GET /ping`` with 200."""


@dataclass(frozen=True)
class LocalModel:
    """The model a local job serves: a ``model.tar.gz`` or model directory, and the container environment."""

    path: Path
    environment: Mapping[str, str] = field(default_factory=dict)
    python: str = sys.executable  # the model's environment (smkit.modelenv), or this interpreter
    image: ImageSource | None = None  # the config's image, which decides that environment


def model_from_config(config_path: str | Path) -> LocalModel:
    """The single container of a deployment config, as a :class:`LocalModel`.

    Batch transform runs one container of one model; serial pipelines and multi-model containers are refused.
    """
    from smkit.config import load_config

    config = load_config(config_path)
    containers = config.model.containers
    if len(containers) != 1 or containers[0].model_data.source == "multi-model":
        raise ValueError(
            f"--config {config_path}: batch-transform --local runs one single-model container, but "
            f"model.containers has {len(containers)} ({containers[0].model_data.source}); use --model PATH"
        )
    container = containers[0]
    return LocalModel(
        path=Path(container.model_data.path),
        environment=dict(container.environment),
        image=container.image or config.image,
    )


def batch_environment(options: TransformOptions) -> dict[str, str]:
    """The ``SAGEMAKER_*`` variables a batch container gets for the values the job sets."""
    env = {"SAGEMAKER_BATCH": "true", "SMKIT_PROFILE": "batch"}
    if options.max_payload_mb is not None:
        # 0 means "no limit" for the job; the container still needs a concrete ceiling (docs/hosting-contract.md).
        env["SAGEMAKER_MAX_PAYLOAD_IN_MB"] = str(options.max_payload_mb or 100)
    if options.batch_strategy is not None:
        strategy = options.batch_strategy
        env["SAGEMAKER_BATCH_STRATEGY"] = (
            "MULTI_RECORD" if strategy is BatchStrategy.MULTI_RECORD else "SINGLE_RECORD"
        )
    if options.max_concurrent_transforms is not None:
        env["SAGEMAKER_MAX_CONCURRENT_TRANSFORMS"] = str(options.max_concurrent_transforms)
    return env


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def _ping(port: int) -> tuple[int | None, str]:
    """``GET /ping``: (status, error message) or (None, "") when nothing answers yet."""
    try:
        with urllib.request.urlopen(f"http://{HOST}:{port}/ping", timeout=PING_TIMEOUT_S) as resp:
            return int(resp.status), ""
    except urllib.error.HTTPError as exc:
        return exc.code, error_message(exc.read())
    except (urllib.error.URLError, OSError):
        return None, ""


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the job's process dies, so no runtime outlives a killed job."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@contextlib.contextmanager
def serving_runtime(
    model: LocalModel,
    *,
    environment: Mapping[str, str],
    workers: int,
    log_path: Path,
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S,
) -> Iterator[str]:
    """Start ``python -m smkit.serving`` for ``model``; yield its base URL; stop its process group on exit."""
    port = _free_port()
    command = [sys.executable, "-m", "smkit.serving", "--model", str(model.path)]
    command += ["--host", HOST, "--port", str(port), "--workers", str(workers)]
    env = {**os.environ, **model.environment, **environment, "SAGEMAKER_BIND_TO_PORT": str(port)}
    if model.python != sys.executable:
        env["SMKIT_WORKER_PYTHON"] = model.python  # docs/serving-runtime.md: the model workers' interpreter
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
    try:
        _wait_ready(process, port, log_path, startup_timeout_s)
        yield f"http://{HOST}:{port}"
    finally:
        _stop(process)


def _wait_ready(process: subprocess.Popen[bytes], port: int, log_path: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        code = process.poll()
        if code is not None:
            raise RuntimeStartError(
                f"the serving runtime exited with code {code} before GET /ping answered 200; "
                f"last lines of its log:\n{_tail(log_path)}"
            )
        status, message = _ping(port)
        if status == 200:
            return
        if status is not None and LOAD_FAILED in message:
            # The runtime keeps answering 503 after a failed model_fn; waiting longer cannot help.
            raise RuntimeStartError(f"GET /ping answered {status}: {message}")
        time.sleep(0.05)
    raise RuntimeStartError(
        f"the serving runtime did not answer GET /ping with 200 within {timeout_s:.0f} s; "
        f"last lines of its log:\n{_tail(log_path)}"
    )


def _tail(path: Path) -> str:
    lines = path.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
    return "\n".join(lines) or "(empty)"


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _stop(process: subprocess.Popen[bytes]) -> None:
    _signal_group(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=STOP_GRACE_S)
    # Workers may outlive the leader; the group id is the leader's pid (start_new_session).
    _signal_group(process.pid, signal.SIGKILL)
    if process.poll() is None:
        process.wait()


def run_local_job(
    options: TransformOptions,
    model: LocalModel,
    *,
    input_location: str,
    output_location: str,
    log: Log = print,
    endpoint_url: str | None = None,
    container_log: Path | None = None,
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S,
) -> JobResult:
    """Validate, start the runtime, transform every input object, stop the runtime; return the outcomes.

    Bad options or locations raise before anything starts; per-object failures are in the result. The
    runtime gets one worker per MaxConcurrentTransforms, at most one per CPU.
    """
    validate(options, local=True)
    if not model.path.exists():
        raise FileNotFoundError(
            f"--model {str(model.path)!r} does not exist; build it with `make package-model` or pass a "
            "model directory"
        )
    check_separate(input_location, output_location)
    inputs = list_inputs(input_location, compression=options.compression_type, endpoint_url=endpoint_url)
    sink = open_sink(output_location, endpoint_url=endpoint_url)
    workers = min(options.max_concurrent_transforms or 1, os.cpu_count() or 1)
    with contextlib.ExitStack() as stack:
        if container_log is None:
            scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="smkit-batch-")))
            container_log = scratch / "container.log"
        base_url = stack.enter_context(
            serving_runtime(
                model,
                environment=batch_environment(options),
                workers=workers,
                log_path=container_log,
                startup_timeout_s=startup_timeout_s,
            )
        )
        client = ContainerClient(
            base_url, timeout_s=options.invocations_timeout_s, max_retries=options.invocations_max_retries
        )
        resolved = resolve(options, client.execution_parameters())
        return TransformRunner(client=client, resolved=resolved, sink=sink, log=log).run(inputs)
