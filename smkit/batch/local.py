"""``--local``: run a transform job against the serving runtime started on 127.0.0.1.

The runtime is started the way SageMaker starts a batch container (docs/batch-transform.md):
``SAGEMAKER_BATCH=true`` plus ``SAGEMAKER_MAX_PAYLOAD_IN_MB``, ``SAGEMAKER_BATCH_STRATEGY`` and ``SAGEMAKER_MAX_CONCURRENT_TRANSFORMS``
for the values the job sets. Once ``GET /ping`` answers 200 the job asks ``GET /execution-parameters`` for
the values it left unset, runs, and the runtime is stopped (its whole process group) whatever happens.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from smkit.batch.client import ContainerClient
from smkit.batch.job import JobResult, Log, TransformRunner
from smkit.batch.objects import check_separate, list_inputs, open_sink
from smkit.batch.options import BatchStrategy, TransformOptions, resolve, validate
from smkit.config.resolved import ImageRuntime, ResolvedDeployment
from smkit.contract import (
    BATCH,
    BATCH_MAX_PAYLOAD_MB,
    BATCH_STRATEGY,
    BIND_TO_PORT,
    DEFAULT_STARTUP_HEALTH_CHECK_S,
    MAX_CONCURRENT_TRANSFORMS,
    MAX_PAYLOAD_IN_MB,
    SMKIT_PROFILE,
    SMKIT_WORKER_PYTHON,
    RuntimeSettings,
)
from smkit.cpus import available_cpus
from smkit.ops.server_process import Launch, ServerProcess
from smkit.process import runtime_command

STARTUP_LIMIT = "wait longer with smkit batch-transform --startup-timeout SECONDS"


@dataclass(frozen=True)
class LocalModel:
    """The model a local job serves: a ``model.tar.gz`` or model directory, and the container environment."""

    path: Path
    environment: Mapping[str, str] = field(default_factory=dict)
    python: str = sys.executable  # the model's environment (smkit.modelenv), or this interpreter
    runtime: ImageRuntime | None = None  # the config's image, which decides that environment
    network_isolation: bool = False  # the config's model.network_isolation (then requirements must be met)


def model_from_deployment(deployment: ResolvedDeployment, source: str) -> LocalModel:
    """The single container of a resolved deployment, as a :class:`LocalModel` (its resolved environment,
    image and network isolation: :mod:`smkit.config.resolved`); ``source`` names the config in messages.

    Batch transform runs one container of one model; serial pipelines and multi-model containers are refused.
    """
    containers = deployment.containers
    if len(containers) != 1 or containers[0].multi_model:
        raise ValueError(
            f"{source}: a local transform job runs one single-model container, but "
            f"model.containers has {len(containers)} ({containers[0].model_data.kind}); give the model itself"
        )
    container = containers[0]
    if container.model_data.path is None:
        raise ValueError(
            f"{source}: model data {container.model_data.uri} is in S3; a local transform job needs it on "
            "this machine: download it and pass --model PATH"
        )
    return LocalModel(
        path=container.model_data.path,
        environment=dict(container.environment),
        runtime=container.image.runtime,
        network_isolation=container.network_isolation,
    )


def batch_environment(options: TransformOptions) -> dict[str, str]:
    """The ``SAGEMAKER_*`` variables a batch container gets for the values the job sets."""
    env = {BATCH: "true", SMKIT_PROFILE: "batch"}
    if options.max_payload_mb is not None:
        # 0 means "no limit" for the job; the container still needs a concrete ceiling (docs/batch-transform.md).
        env[MAX_PAYLOAD_IN_MB] = str(options.max_payload_mb or BATCH_MAX_PAYLOAD_MB)
    if options.batch_strategy is not None:
        strategy = options.batch_strategy
        env[BATCH_STRATEGY] = "MULTI_RECORD" if strategy is BatchStrategy.MULTI_RECORD else "SINGLE_RECORD"
    if options.max_concurrent_transforms is not None:
        env[MAX_CONCURRENT_TRANSFORMS] = str(options.max_concurrent_transforms)
    return env


@contextlib.contextmanager
def serving_runtime(
    model: LocalModel,
    *,
    environment: Mapping[str, str],
    workers: int,
    log_path: Path,
    startup_timeout_s: float = DEFAULT_STARTUP_HEALTH_CHECK_S,
) -> Iterator[str]:
    """Start ``python -m smkit.serving`` for ``model`` (:mod:`smkit.ops.server_process`); yield its base URL;
    stop its process group on exit."""

    def variables(port: int) -> dict[str, str]:
        env = {**os.environ, **model.environment, **environment, BIND_TO_PORT: str(port)}
        if model.python != sys.executable:
            env[SMKIT_WORKER_PYTHON] = model.python  # docs/serving-runtime.md: the model workers' interpreter
        return env

    launch = Launch(
        name="the serving runtime",
        command=lambda port: runtime_command(model.path, port=port, workers=workers),
        environment=variables,
        log_path=log_path,
        timeout_s=startup_timeout_s,
        limit=STARTUP_LIMIT,
    )
    with ServerProcess.start(launch) as server:
        yield server.url


def run_local_job(
    options: TransformOptions,
    model: LocalModel,
    *,
    input_location: str,
    output_location: str,
    log: Log = print,
    endpoint_url: str | None = None,
    container_log: Path | None = None,
    startup_timeout_s: float = DEFAULT_STARTUP_HEALTH_CHECK_S,
) -> JobResult:
    """Validate, start the runtime, transform every input object, stop the runtime; return the outcomes.

    Bad options or locations raise before anything starts; per-object failures are in the result. The
    runtime gets one worker per MaxConcurrentTransforms, at most one per CPU.
    """
    validate(options, local=True)
    environment = batch_environment(options)
    # The container's reading of its environment: a bad value stops the job here, named, before any start.
    RuntimeSettings.from_environment({**model.environment, **environment})
    if not model.path.exists():
        raise FileNotFoundError(
            f"model {str(model.path)!r} does not exist; build it with `make package-model` or give a "
            "model directory"
        )
    check_separate(input_location, output_location)
    inputs = list_inputs(input_location, compression=options.compression_type, endpoint_url=endpoint_url)
    sink = open_sink(output_location, endpoint_url=endpoint_url)
    workers = min(options.max_concurrent_transforms or 1, available_cpus().count)
    with contextlib.ExitStack() as stack:
        if container_log is None:
            scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="smkit-batch-")))
            container_log = scratch / "container.log"
        base_url = stack.enter_context(
            serving_runtime(
                model,
                environment=environment,
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
