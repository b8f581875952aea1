"""The SageMaker hosting contract's names and numbers, defined once for the whole library.

Environment variables, ports, timeouts, payload limits, HTTP header names and media types, as
docs/hosting-contract.md, docs/serverless-async.md and docs/batch-transform.md describe them. The serving
runtime, the local endpoint, batch transform, the packager and the client import them from here; the limits
AWS sets are defined in :mod:`smkit.aws.limits` and named here too. Standard library only.

Sources: https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-inference-code.html,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_runtime_InvokeEndpoint.html,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_runtime_InvokeEndpointAsync.html.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from smkit.aws.limits import (
    ASYNC_INLINE_BODY_LIMIT,
    ASYNC_PAYLOAD_LIMIT,
    BATCH_DEFAULT_MAX_PAYLOAD_MB,
    BATCH_MAX_PAYLOAD_MB,
    CUSTOM_ATTRIBUTES_LIMIT,
    DEFAULT_ASYNC_INVOCATION_TIMEOUT_S,
    DEFAULT_REQUEST_TTL_S,
    INVOCATION_TIMEOUT_RANGE_S,
    INVOCATION_TIMEOUT_S,
    MAX_TOKEN_SECONDS,
    MIB,
    PING_TIMEOUT_S,
    REALTIME_PAYLOAD_LIMIT,
    REQUEST_TTL_RANGE_S,
    SERVERLESS_PAYLOAD_LIMIT,
    STARTUP_HEALTH_CHECK_RANGE_S,
)

__all__ = [
    "ASYNC_INLINE_BODY_LIMIT",
    "ASYNC_PAYLOAD_LIMIT",
    "BATCH_DEFAULT_MAX_PAYLOAD_MB",
    "BATCH_MAX_PAYLOAD_MB",
    "CUSTOM_ATTRIBUTES_LIMIT",
    "DEFAULT_ASYNC_INVOCATION_TIMEOUT_S",
    "DEFAULT_REQUEST_TTL_S",
    "INVOCATION_TIMEOUT_RANGE_S",
    "INVOCATION_TIMEOUT_S",
    "MAX_TOKEN_SECONDS",
    "MIB",
    "PING_TIMEOUT_S",
    "REALTIME_PAYLOAD_LIMIT",
    "REQUEST_TTL_RANGE_S",
    "SERVERLESS_PAYLOAD_LIMIT",
    "STARTUP_HEALTH_CHECK_RANGE_S",
]

# Environment variables the platform or the SageMaker SDK sets and containers read.
BIND_TO_PORT = "SAGEMAKER_BIND_TO_PORT"
SAFE_PORT_RANGE = "SAGEMAKER_SAFE_PORT_RANGE"
MULTI_MODEL = "SAGEMAKER_MULTI_MODEL"
PROGRAM = "SAGEMAKER_PROGRAM"
REGION = "SAGEMAKER_REGION"
MODEL_SERVER_WORKERS = "SAGEMAKER_MODEL_SERVER_WORKERS"
MODEL_SERVER_TIMEOUT_SECONDS = "SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS"
MODEL_SERVER_TIMEOUT = "SAGEMAKER_MODEL_SERVER_TIMEOUT"  # read as seconds (docs/handler-semantics.md)
DEFAULT_INVOCATIONS_ACCEPT = "SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT"
MAX_PAYLOAD_IN_MB = "SAGEMAKER_MAX_PAYLOAD_IN_MB"
STARTUP_TIMEOUT = "SAGEMAKER_STARTUP_TIMEOUT"
CONTAINER_LOG_LEVEL = "SAGEMAKER_CONTAINER_LOG_LEVEL"
BATCH = "SAGEMAKER_BATCH"
BATCH_STRATEGY = "SAGEMAKER_BATCH_STRATEGY"
MAX_CONCURRENT_TRANSFORMS = "SAGEMAKER_MAX_CONCURRENT_TRANSFORMS"
# Dynamic batching, named as AWS's PyTorch inference toolkit names TorchServe's batchSize / maxBatchDelay
# (https://github.com/aws/sagemaker-pytorch-inference-toolkit/blob/master/src/sagemaker_pytorch_serving_container/ts_parameters.py).
TS_BATCH_SIZE = "SAGEMAKER_TS_BATCH_SIZE"
TS_MAX_BATCH_DELAY = "SAGEMAKER_TS_MAX_BATCH_DELAY"  # milliseconds
MODEL_DIR = "SM_MODEL_DIR"
TFS_DEFAULT_MODEL_NAME = "SAGEMAKER_TFS_DEFAULT_MODEL_NAME"  # TensorFlow Serving container, several models
# Read by AWS's Hugging Face inference images (aws/sagemaker-huggingface-inference-toolkit), and by the kit's
# runtime, whose Hugging Face defaults they turn on (docs/hugging-face.md).
HF_TASK = "HF_TASK"  # the transformers pipeline task, e.g. text-classification
HF_MODEL_ID = "HF_MODEL_ID"  # a model to load instead of the model data (here: a local folder only)
HF_TRUST_REMOTE_CODE = "HF_TRUST_REMOTE_CODE"  # pipeline(trust_remote_code=...)

# Variables of smkit's own serving runtime (docs/serving-runtime.md) that other parts of the library set
# for a runtime they start: the local endpoint, local batch transform, the model environments, the CLI.
# The runtime's other SMKIT_* variables are named in smkit/hosting/env.py.
SMKIT_PROFILE = "SMKIT_PROFILE"  # realtime | serverless | async | batch: which payload limit applies
# Where the serving runtime serves its Prometheus metrics (docs/observability.md).
SMKIT_METRICS_PATH = "SMKIT_METRICS_PATH"
SMKIT_WORKER_PYTHON = "SMKIT_WORKER_PYTHON"  # the model workers' interpreter (the model's environment)
# Requests one model worker runs at once, for handlers that wait on I/O (docs/serving-runtime.md).
SMKIT_WORKER_CONCURRENCY = "SMKIT_WORKER_CONCURRENCY"
MAX_WORKER_CONCURRENCY = 1024  # threads per worker; each holds a scoreboard slot
SMKIT_FRAMEWORK = "SMKIT_FRAMEWORK"  # an AWS framework image's default handlers to apply
SMKIT_MODEL_CACHE_SETTING = "SMKIT_MODEL_CACHE_SETTING"  # MultiModelConfig.ModelCacheSetting
SMKIT_REQUIREMENTS_DIR = "SMKIT_REQUIREMENTS_DIR"  # where the model's requirements.txt were installed

DEFAULT_PORT = 8080
DEFAULT_MODEL_DIR = "/opt/ml/model"
# Where SageMaker puts each of a container's AdditionalModelDataSources: CHANNELS_DIR/<ChannelName>/
# (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_AdditionalModelDataSource.html; the path as
# the SageMaker Python SDK names it, sagemaker/serve/utils/optimize_utils.py).
CHANNELS_DIR = "/opt/ml/additional-model-data-sources"
# CHANNELS_DIR as a whole path in a value: the folder itself or followed by "/", alone or inside a larger value
# (JSON such as vLLM's --speculative-config, a ":"-list, --flag=value, file://); never the start of a longer
# name (CHANNELS_DIR-old) nor the end of another path (/backup/opt/ml/...).
_AROUND_PATH = "\"'\\s,:;=\\[\\]{}()"
CHANNELS_PATH = re.compile(
    rf"(?:(?<![^{_AROUND_PATH}])|(?<=://)){re.escape(CHANNELS_DIR)}(?=$|[/{_AROUND_PATH}])"
)
DEFAULT_PROGRAM = "inference.py"
DEFAULT_ACCEPT = "application/json"
# User-Agent of the kit's own start-up waits on GET /ping (local endpoint, batch): the runtime does not
# access-log them; a failed wait is summarized in one line instead (smkit/process.py).
READINESS_PROBE_AGENT = "smkit-readiness-probe"
# /ping's 503 message, up to its colon, once every worker slot has given up loading the model.
LOAD_FAILED = "the model failed to load"

# Timeouts, in seconds.
# SageMaker documents no default for a variant that sets no ContainerStartupHealthCheckTimeoutInSeconds;
# the local endpoint and local batch transform wait this long for /ping then.
DEFAULT_STARTUP_HEALTH_CHECK_S = 120.0
STOP_GRACE_S = 30.0  # SIGTERM, then SIGKILL this much later
# The serving runtime lets requests in flight finish for this long after SIGTERM, which leaves the rest of
# STOP_GRACE_S to stop its model workers.
IN_FLIGHT_GRACE_S = 20.0
DEFAULT_STARTUP_TIMEOUT_S = 360.0  # SAGEMAKER_STARTUP_TIMEOUT: one model's load (docs/multi-model.md)

# Payload limits, in bytes unless named otherwise.
# An oversize request body is read and dropped up to this many bytes past its limit, so the client gets
# its 413 instead of a broken pipe (the serving runtime, the local gateway); beyond that the connection is
# closed unread.
DRAIN_LIMIT = 64 * MIB

# The serving runtime's profiles (SMKIT_PROFILE) and the request payload limit each implies; async reads its
# input from S3; batch transform's default is MaxPayloadInMB's.
PROFILE_PAYLOAD_LIMITS: Mapping[str, int] = {
    "realtime": REALTIME_PAYLOAD_LIMIT,
    "serverless": SERVERLESS_PAYLOAD_LIMIT,
    "async": ASYNC_PAYLOAD_LIMIT,
    "batch": BATCH_DEFAULT_MAX_PAYLOAD_MB * MIB,
}
PROFILES = tuple(PROFILE_PAYLOAD_LIMITS)
# The AWS framework images whose default handlers SMKIT_FRAMEWORK applies (smkit/serving/worker/frameworks.py).
FRAMEWORKS = ("pytorch", "xgboost", "sklearn", "tensorflow", "huggingface")

# Dynamic batching defaults, as AWS's PyTorch toolkit (ts_environment.py): 1 is no batching.
DEFAULT_BATCH_SIZE = 1
DEFAULT_MAX_BATCH_DELAY_MS = 100.0


# HTTP headers of the SageMaker Runtime API (botocore ``sagemaker-runtime`` 2017-05-13). The first two
# also reach the container.
CUSTOM_ATTRIBUTES = "X-Amzn-SageMaker-Custom-Attributes"
TARGET_MODEL = "X-Amzn-SageMaker-Target-Model"
TARGET_VARIANT = "X-Amzn-SageMaker-Target-Variant"
TARGET_CONTAINER = "X-Amzn-SageMaker-Target-Container-Hostname"
INFERENCE_ID = "X-Amzn-SageMaker-Inference-Id"
INFERENCE_COMPONENT = "X-Amzn-SageMaker-Inference-Component"
ASYNC_CONTENT_TYPE = "X-Amzn-SageMaker-Content-Type"
ASYNC_ACCEPT = "X-Amzn-SageMaker-Accept"
INPUT_LOCATION = "X-Amzn-SageMaker-InputLocation"
OUTPUT_PATH_EXTENSION = "X-Amzn-SageMaker-S3OutputPathExtension"
OUTPUT_FILENAME = "X-Amzn-SageMaker-Filename"
REQUEST_TTL = "X-Amzn-SageMaker-RequestTTLSeconds"
INVOCATION_TIMEOUT = "X-Amzn-SageMaker-InvocationTimeoutSeconds"
INVOKED_VARIANT = "x-Amzn-Invoked-Production-Variant"
OUTPUT_LOCATION = "X-Amzn-SageMaker-OutputLocation"
FAILURE_LOCATION = "X-Amzn-SageMaker-FailureLocation"
# Stateful sessions and LoRA adapters (docs/sessions-and-adapters.md): the runtime API's SessionId travels
# as SESSION_ID both ways to the container; the container answers NEW_SESSION_ID / CLOSED_SESSION_ID.
SESSION_ID = "X-Amzn-SageMaker-Session-Id"
NEW_SESSION_ID = "X-Amzn-SageMaker-New-Session-Id"
CLOSED_SESSION_ID = "X-Amzn-SageMaker-Closed-Session-Id"
ADAPTER_IDENTIFIER = "X-Amzn-SageMaker-Adapter-Identifier"
ADAPTER_ALIAS = "X-Amzn-SageMaker-Adapter-Alias"

# Media types.
JSON = "application/json"
CSV = "text/csv"
NPY = "application/x-npy"
NPZ = "application/x-npz"
JSON_LINES = "application/jsonlines"
ANY = "*/*"
# The toolkit hands the body to handlers as ``str`` only for exactly these Content-Types.
TEXT_BODY_TYPES = frozenset({JSON, CSV})


def uses_huggingface_defaults(environment: Mapping[str, str]) -> bool:
    """Whether a container's environment asks for the Hugging Face defaults (``HF_TASK`` or ``HF_MODEL_ID``).

    The one rule for the kit's image, read by its serving runtime from the container's environment and by
    the packager from the config's ``model.containers[].environment``. AWS's Hugging Face images apply
    those defaults whatever the environment says.
    """
    return bool(environment.get(HF_TASK, "").strip() or environment.get(HF_MODEL_ID, "").strip())


def media_type(value: str | None) -> str:
    """The bare, lower-case media type: ``'Text/CSV; charset=utf-8'`` -> ``'text/csv'``; None -> ``''``."""
    if not value:
        return ""
    return value.split(";", 1)[0].strip().lower()


def charset(value: str | None, default: str = "utf-8") -> str:
    """The ``charset`` parameter of a Content-Type, else ``default``."""
    for param in (value or "").split(";")[1:]:
        key, _, val = param.partition("=")
        if key.strip().lower() == "charset" and val.strip():
            return val.strip().strip('"')
    return default


# --- The container's settings, read from its environment in one place ---------------------------------------

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})


class SettingError(ValueError):
    """A container variable holds a value the runtime cannot use: the message names it, the value and the fix.

    Attributes:
        variable: the variable's name, e.g. ``SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS``.
        value: the value it holds.
        problem: what is wrong with it (``is not a number``).
        fix: what to write instead.
    """

    def __init__(self, variable: str, value: str, problem: str, fix: str) -> None:
        super().__init__(f"{variable}={value!r} {problem}; {fix}")
        self.variable = variable
        self.value = value
        self.problem = problem
        self.fix = fix


def read_flag(environ: Mapping[str, str], name: str, default: bool) -> bool:
    """A boolean variable (true/false, yes/no, on/off, 1/0; unset: ``default``)."""
    raw = environ.get(name)
    if raw is None:
        return default
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise SettingError(name, raw, "is not a boolean", "use true or false")


def read_number(
    environ: Mapping[str, str], name: str, default: float | None, *, minimum: float
) -> float | None:
    """A number at least ``minimum`` (unset or blank: ``default``)."""
    raw = environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingError(name, raw, "is not a number", f"use e.g. {name}=60") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise SettingError(name, raw, "is not a finite number", f"use e.g. {name}=60")
    if value < minimum:
        raise SettingError(name, raw, f"is below {minimum:g}", f"use a value >= {minimum:g}")
    return value


def read_int(environ: Mapping[str, str], name: str, default: int | None, *, minimum: int) -> int | None:
    """A whole number at least ``minimum`` (unset or blank: ``default``)."""
    value = read_number(environ, name, None, minimum=minimum)
    if value is None:
        return default
    if value != int(value):
        raise SettingError(name, environ[name], "is not a whole number", f"use e.g. {name}=2")
    return int(value)


def read_choice(environ: Mapping[str, str], name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of ``choices``, matched without regard to case (unset or blank: ``default``)."""
    raw = environ.get(name)
    if raw is None or not raw.strip():
        return default
    for choice in choices:
        if raw.strip().lower() == choice.lower():
            return choice
    raise SettingError(
        name,
        raw,
        f"is not one of {', '.join(choices)}",
        f"use one of them, or unset it for {default or 'none'}",
    )


@dataclass(frozen=True)
class RuntimeSettings:
    """What a container's environment says about how it serves: the one reader of these variables.

    The serving runtime reads its own environment with it (smkit/hosting/env.py); the local endpoint and
    local batch transform read each container's resolved environment with it before starting the container,
    so a bad value stops them with the same message the container would print; the config rules read a
    container's ``environment`` with it.

    Attributes:
        invocation_timeout_s: ``SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS``, else ``SAGEMAKER_MODEL_SERVER_TIMEOUT``
            (read as seconds, docs/handler-semantics.md), else 60: the limit of one request in the container.
        profile: ``SMKIT_PROFILE`` (:data:`PROFILES`), which picks the default payload limit.
        max_payload_bytes: ``SAGEMAKER_MAX_PAYLOAD_IN_MB`` x 1 MiB, else the profile's limit.
        workers: ``SAGEMAKER_MODEL_SERVER_WORKERS``, or None (the image's default: one per CPU).
        startup_timeout_s: ``SAGEMAKER_STARTUP_TIMEOUT``: how long one model may take to load (360 s).
        batch_size: ``SAGEMAKER_TS_BATCH_SIZE`` (default 1: no dynamic batching).
        max_batch_delay_ms: ``SAGEMAKER_TS_MAX_BATCH_DELAY`` (default 100), at most the invocation timeout.
        worker_concurrency: ``SMKIT_WORKER_CONCURRENCY`` (default 1): requests one worker runs at once, for
            handlers that wait on I/O; above 1 refused with dynamic batching and in multi-model mode.
        in_flight_grace_s: how long requests in flight may finish after SIGTERM (not a variable: it fits
            inside the platform's :data:`STOP_GRACE_S`).
    """

    invocation_timeout_s: float = INVOCATION_TIMEOUT_S
    profile: str = "realtime"
    max_payload_bytes: int = REALTIME_PAYLOAD_LIMIT
    workers: int | None = None
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S
    batch_size: int = DEFAULT_BATCH_SIZE
    max_batch_delay_ms: float = DEFAULT_MAX_BATCH_DELAY_MS
    worker_concurrency: int = 1
    in_flight_grace_s: float = IN_FLIGHT_GRACE_S

    @property
    def batching(self) -> bool:
        """Dynamic batching is on: ``SAGEMAKER_TS_BATCH_SIZE`` above 1."""
        return self.batch_size > 1

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> RuntimeSettings:
        """Read and check the variables; raise :class:`SettingError` naming the first bad one."""
        profile = read_choice(environ, SMKIT_PROFILE, "realtime", PROFILES)
        payload_mb = read_number(environ, MAX_PAYLOAD_IN_MB, None, minimum=0.001)
        timeout = read_number(environ, MODEL_SERVER_TIMEOUT_SECONDS, None, minimum=0.001)
        if timeout is None:
            timeout = read_number(environ, MODEL_SERVER_TIMEOUT, INVOCATION_TIMEOUT_S, minimum=0.001)
        assert timeout is not None
        batch_size, batch_delay = _batching(environ, timeout)
        startup = read_number(environ, STARTUP_TIMEOUT, DEFAULT_STARTUP_TIMEOUT_S, minimum=1)
        assert startup is not None
        return cls(
            invocation_timeout_s=timeout,
            profile=profile,
            max_payload_bytes=int(payload_mb * MIB)
            if payload_mb is not None
            else PROFILE_PAYLOAD_LIMITS[profile],
            workers=read_int(environ, MODEL_SERVER_WORKERS, None, minimum=1),
            startup_timeout_s=startup,
            batch_size=batch_size,
            max_batch_delay_ms=batch_delay,
            worker_concurrency=_concurrency(environ, batch_size),
        )


def _concurrency(environ: Mapping[str, str], batch_size: int) -> int:
    """``SMKIT_WORKER_CONCURRENCY``: 1 unless set; above 1 only where a worker can run requests side by side."""
    name = SMKIT_WORKER_CONCURRENCY
    value = int(read_int(environ, name, 1, minimum=1) or 1)
    if value > MAX_WORKER_CONCURRENCY:
        raise SettingError(
            name,
            environ[name],
            f"is more than {MAX_WORKER_CONCURRENCY} requests per worker",
            f"use at most {MAX_WORKER_CONCURRENCY}, with more workers ({MODEL_SERVER_WORKERS}) if needed",
        )
    if value > 1 and read_flag(environ, MULTI_MODEL, False):
        raise SettingError(
            name,
            environ[name],
            f"cannot serve multi-model mode ({MULTI_MODEL}=true): models load and unload inside requests",
            f"unset {name} (or set it to 1), or serve the model alone",
        )
    if value > 1 and batch_size > 1:
        raise SettingError(
            name,
            environ[name],
            f"cannot be combined with dynamic batching ({TS_BATCH_SIZE}={batch_size}): a batching worker "
            "already holds a batch of requests at once",
            f"unset {name} for a CPU-bound model that batches, or unset {TS_BATCH_SIZE} for a handler that "
            "waits on I/O",
        )
    return value


def _batching(environ: Mapping[str, str], timeout: float) -> tuple[int, float]:
    """``SAGEMAKER_TS_BATCH_SIZE`` (>= 1) and ``SAGEMAKER_TS_MAX_BATCH_DELAY`` (ms, within the invocation
    timeout: a request waiting for batch-mates longer than it may take in all could never be answered)."""
    raw = environ.get(TS_BATCH_SIZE, "").strip()
    fix = f"use the most requests one predict_batch_fn call may serve, e.g. {TS_BATCH_SIZE}=8"
    try:
        size = int(raw) if raw else DEFAULT_BATCH_SIZE
    except ValueError:
        raise SettingError(TS_BATCH_SIZE, raw, "is not a whole number", f"{fix} (1: no batching)") from None
    if size < 1:
        raise SettingError(TS_BATCH_SIZE, raw, "is below 1", f"{fix}, or 1 (or unset) for no batching")
    delay = read_number(environ, TS_MAX_BATCH_DELAY, DEFAULT_MAX_BATCH_DELAY_MS, minimum=0)
    delay = DEFAULT_MAX_BATCH_DELAY_MS if delay is None else delay
    if TS_MAX_BATCH_DELAY in environ and delay > timeout * 1000:
        raise SettingError(
            TS_MAX_BATCH_DELAY,
            environ[TS_MAX_BATCH_DELAY],
            f"ms is over the invocation timeout of {timeout:g} s ({MODEL_SERVER_TIMEOUT_SECONDS})",
            f"a request would wait for batch-mates longer than it may take in all; use at most "
            f"{timeout * 1000:g} (a few ms is usual), or raise the timeout",
        )
    return size, delay
