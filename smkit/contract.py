"""The SageMaker hosting contract's names and numbers, defined once for the whole library.

Environment variables, ports, timeouts, payload limits, HTTP header names and media types, as
docs/hosting-contract.md, docs/serverless-async.md and docs/batch-transform.md describe them. The serving
runtime, the local endpoint, batch transform, the packager and the client import them from here.
Standard library only.

Sources: https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-inference-code.html,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_runtime_InvokeEndpoint.html,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_runtime_InvokeEndpointAsync.html.
"""

from __future__ import annotations

from collections.abc import Mapping

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
# The runtime's other SMKIT_* variables are named in smkit/serving/env.py.
SMKIT_PROFILE = "SMKIT_PROFILE"  # realtime | serverless | async | batch: which payload limit applies
SMKIT_WORKER_PYTHON = "SMKIT_WORKER_PYTHON"  # the model workers' interpreter (the model's environment)
SMKIT_FRAMEWORK = "SMKIT_FRAMEWORK"  # an AWS framework image's default handlers to apply
SMKIT_MODEL_CACHE_SETTING = "SMKIT_MODEL_CACHE_SETTING"  # MultiModelConfig.ModelCacheSetting
SMKIT_REQUIREMENTS_DIR = "SMKIT_REQUIREMENTS_DIR"  # where the model's requirements.txt were installed

DEFAULT_PORT = 8080
DEFAULT_MODEL_DIR = "/opt/ml/model"
DEFAULT_PROGRAM = "inference.py"
DEFAULT_ACCEPT = "application/json"
# User-Agent of the kit's own start-up waits on GET /ping (local endpoint, batch): the runtime does not
# access-log them; a failed wait is summarized in one line instead (smkit/process.py).
READINESS_PROBE_AGENT = "smkit-readiness-probe"
# /ping's 503 message, up to its colon, once every worker slot has given up loading the model.
LOAD_FAILED = "the model failed to load"

# Timeouts, in seconds.
PING_TIMEOUT_S = 2.0  # each GET /ping
INVOCATION_TIMEOUT_S = 60.0  # each POST /invocations
STARTUP_HEALTH_CHECK_RANGE_S = (60, 3600)  # ContainerStartupHealthCheckTimeoutInSeconds
STOP_GRACE_S = 30.0  # SIGTERM, then SIGKILL this much later

# Payload limits, in bytes unless named otherwise.
MIB = 1024 * 1024
REALTIME_PAYLOAD_LIMIT = 6 * MIB  # 6,291,456: InvokeEndpoint
SERVERLESS_PAYLOAD_LIMIT = 4 * MIB
ASYNC_PAYLOAD_LIMIT = 1024 * MIB  # InvokeEndpointAsync input object in S3
ASYNC_INLINE_BODY_LIMIT = 128_000
BATCH_DEFAULT_MAX_PAYLOAD_MB = 6
BATCH_MAX_PAYLOAD_MB = 100  # also the ceiling of MaxConcurrentTransforms x MaxPayloadInMB

# InvokeEndpointAsync ranges and defaults, in seconds.
REQUEST_TTL_RANGE_S = (60, 21_600)
INVOCATION_TIMEOUT_RANGE_S = (1, 3_600)
DEFAULT_REQUEST_TTL_S = 21_600
DEFAULT_ASYNC_INVOCATION_TIMEOUT_S = 900

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
CUSTOM_ATTRIBUTES_LIMIT = 1024  # visible US-ASCII characters

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


def strip_charset(value: str | None) -> str | None:
    """Drop ``; charset=...`` from a media type and keep any other parameter.

    Strict containers reject ``text/csv; charset=utf-8`` between the hops of a serial inference pipeline
    (docs/multi-container.md).
    """
    if value is None:
        return None
    parts = [p.strip() for p in value.split(";")]
    kept = [parts[0]] + [p for p in parts[1:] if p and p.split("=", 1)[0].strip().lower() != "charset"]
    return "; ".join(kept)


# A bearer token of the OpenAI-compatible route lives at most 12 hours (smkit/local/auth.py, smkit token).
# https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-openai-compatible.html
MAX_TOKEN_SECONDS = 12 * 3600
