"""The serving environment, read once into a frozen typed object.

Every ``SAGEMAKER_*`` and ``SMKIT_*`` variable the runtime honours is named in this module and nowhere
else. Sources: docs/hosting-contract.md (hosting contract, payload limits, toolkit variables),
docs/multi-model.md;
https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-inference-code.html
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from smkit import contract

MIB = contract.MIB

# Request payload limit per deployment profile, in bytes (docs/hosting-contract.md): async reads its input
# from S3. Batch transform uses SAGEMAKER_MAX_PAYLOAD_IN_MB (default 6) like every profile when it is set.
PROFILE_PAYLOAD_LIMITS: dict[str, int] = {
    "realtime": contract.REALTIME_PAYLOAD_LIMIT,
    "serverless": contract.SERVERLESS_PAYLOAD_LIMIT,
    "async": contract.ASYNC_PAYLOAD_LIMIT,
    "batch": contract.BATCH_DEFAULT_MAX_PAYLOAD_MB * MIB,
}

# Names of the variables (one table, so a grep finds every one; SageMaker's own, and smkit's own that
# other packages set, are defined in smkit.contract).
VAR_PORT = contract.BIND_TO_PORT
VAR_MULTI_MODEL = contract.MULTI_MODEL
VAR_PROGRAM = contract.PROGRAM
VAR_WORKERS = contract.MODEL_SERVER_WORKERS
VAR_TIMEOUT_SECONDS = contract.MODEL_SERVER_TIMEOUT_SECONDS
VAR_TIMEOUT = contract.MODEL_SERVER_TIMEOUT
VAR_DEFAULT_ACCEPT = contract.DEFAULT_INVOCATIONS_ACCEPT
VAR_MAX_PAYLOAD_MB = contract.MAX_PAYLOAD_IN_MB
VAR_STARTUP_TIMEOUT = contract.STARTUP_TIMEOUT
VAR_BATCH = contract.BATCH
VAR_BATCH_STRATEGY = contract.BATCH_STRATEGY
VAR_MAX_CONCURRENT_TRANSFORMS = contract.MAX_CONCURRENT_TRANSFORMS
VAR_BATCH_SIZE = contract.TS_BATCH_SIZE
VAR_MAX_BATCH_DELAY = contract.TS_MAX_BATCH_DELAY
VAR_LOG_LEVEL = contract.CONTAINER_LOG_LEVEL
VAR_MODEL_DIR = contract.MODEL_DIR
VAR_PROFILE = contract.SMKIT_PROFILE
VAR_DEBUG = "SMKIT_DEBUG"
VAR_MME_BUDGET_MB = "SMKIT_MME_MEMORY_BUDGET_MB"
VAR_MODEL_CACHE = contract.SMKIT_MODEL_CACHE_SETTING
VAR_INSTALL_REQUIREMENTS = "SMKIT_INSTALL_REQUIREMENTS"
VAR_REQUIREMENTS_DIR = contract.SMKIT_REQUIREMENTS_DIR
VAR_ACCESS_LOG = "SMKIT_ACCESS_LOG"
VAR_QUEUE_SIZE = "SMKIT_QUEUE_SIZE"
VAR_BODY_TIMEOUT = "SMKIT_BODY_TIMEOUT_SECONDS"
VAR_WORKER_RETRIES = "SMKIT_WORKER_RETRIES"
VAR_WORKER_PYTHON = contract.SMKIT_WORKER_PYTHON
# Stateful sessions, named as AWS's model-hosting-container-standards package names them
# (docs/sessions-and-adapters.md).
VAR_ENABLE_STATEFUL_SESSIONS = "SAGEMAKER_ENABLE_STATEFUL_SESSIONS"
VAR_SESSIONS_EXPIRATION = "SAGEMAKER_SESSIONS_EXPIRATION"
VAR_SESSIONS_PATH = "SAGEMAKER_SESSIONS_PATH"
DEFAULT_SESSIONS_EXPIRATION_SECONDS = 1200
# Set by the front end for each model worker it starts: what to serve, as JSON (smkit/serving/pool.py).
VAR_WORKER_CONFIG = "SMKIT_WORKER_CONFIG"
# No longer read: every worker is a fresh process that loads the model itself. A value set by an older
# deployment is reported once at start (smkit/serving/launch.py) and changes nothing.
VAR_LOAD_AFTER_FORK = "SMKIT_LOAD_AFTER_FORK"
# pytorch | xgboost | sklearn | huggingface: apply that AWS framework image's default handlers (the local endpoint sets it
# for configs whose image is one; docs/handler-semantics.md).
VAR_FRAMEWORK = contract.SMKIT_FRAMEWORK
FRAMEWORKS = ("pytorch", "xgboost", "sklearn", "tensorflow", "huggingface")
# The Hugging Face inference toolkit's variables (docs/hugging-face.md).
VAR_HF_TASK = contract.HF_TASK
VAR_HF_MODEL_ID = contract.HF_MODEL_ID
VAR_HF_TRUST_REMOTE_CODE = contract.HF_TRUST_REMOTE_CODE

DEFAULT_PORT = contract.DEFAULT_PORT
DEFAULT_MODEL_DIR = contract.DEFAULT_MODEL_DIR
DEFAULT_TIMEOUT_SECONDS = contract.INVOCATION_TIMEOUT_S
DEFAULT_QUEUE_SIZE = 100  # Multi Model Server's default job queue size, as on AWS framework images
DEFAULT_BODY_TIMEOUT_SECONDS = 60.0
DEFAULT_WORKER_RETRIES = 3  # failed loads in a row a worker slot retries (smkit/serving/lifecycle.py)
DEFAULT_STARTUP_TIMEOUT_SECONDS = 360.0  # MME load ceiling (docs/multi-model.md)
DEFAULT_BATCH_SIZE = 1  # no batching, as AWS's PyTorch toolkit
DEFAULT_MAX_BATCH_DELAY_MS = 100.0  # AWS's PyTorch toolkit's default (ts_environment.py)
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})


class ServingEnvError(ValueError):
    """A serving variable holds a value the runtime cannot use; the message names it and the fix."""


def _flag(environ: Mapping[str, str], name: str, default: bool) -> bool:
    raw = environ.get(name)
    if raw is None:
        return default
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ServingEnvError(f"{name}={raw!r} is not a boolean; use true or false")


def _number(environ: Mapping[str, str], name: str, default: float | None, *, minimum: float) -> float | None:
    raw = environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ServingEnvError(f"{name}={raw!r} is not a number; use e.g. {name}=60") from None
    if value < minimum:
        raise ServingEnvError(f"{name}={raw!r} is below {minimum:g}; use a value >= {minimum:g}")
    return value


def _int(environ: Mapping[str, str], name: str, default: int | None, *, minimum: int) -> int | None:
    value = _number(environ, name, None, minimum=minimum)
    if value is None:
        return default
    if value != int(value):
        raise ServingEnvError(f"{name}={environ[name]!r} is not a whole number; use e.g. {name}=2")
    return int(value)


def _choice(environ: Mapping[str, str], name: str, default: str, choices: tuple[str, ...]) -> str:
    raw = environ.get(name)
    if raw is None or not raw.strip():
        return default
    for choice in choices:
        if raw.strip().lower() == choice.lower():
            return choice
    raise ServingEnvError(f"{name}={raw!r} is not one of {', '.join(choices)}")


@dataclass(frozen=True)
class ServingEnv:
    """Everything the serving runtime reads from the environment.

    Attributes:
        port: ``SAGEMAKER_BIND_TO_PORT`` or 8080.
        multi_model: ``SAGEMAKER_MULTI_MODEL=true`` selects the multi-model container API (docs/multi-model.md).
        program: ``SAGEMAKER_PROGRAM``, the handler module file in ``model_dir/code`` (default inference.py).
        workers: ``SAGEMAKER_MODEL_SERVER_WORKERS`` or None (one per CPU the container may use, smkit/cpus.py).
        timeout_seconds: per-invocation limit; ``SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS``, else
            ``SAGEMAKER_MODEL_SERVER_TIMEOUT`` (read as seconds, not MMS's minutes), else 60.
        startup_timeout_seconds: ``SAGEMAKER_STARTUP_TIMEOUT`` (model load limit), default 360.
        default_accept: ``SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT`` or ``application/json``.
        profile: ``SMKIT_PROFILE`` (realtime, serverless, async, batch); picks the default payload limit.
        max_payload_bytes: ``SAGEMAKER_MAX_PAYLOAD_IN_MB`` x 1 MiB, else the profile's limit.
        batch / batch_strategy / max_concurrent_transforms: batch-transform settings for
            ``GET /execution-parameters``.
        debug: ``SMKIT_DEBUG=true`` adds the traceback to 500 bodies (off by default).
        mme_memory_budget_bytes: ``SMKIT_MME_MEMORY_BUDGET_MB``; the resident size all loaded models
            (times the worker count) may take before least-recently-used models are unloaded.
            Default: 70 % of physical memory.
        model_cache_enabled: ``SMKIT_MODEL_CACHE_SETTING=Disabled`` mirrors
            ``MultiModelConfig.ModelCacheSetting=Disabled``: a model is unloaded after every call.
        install_requirements: ``SMKIT_INSTALL_REQUIREMENTS`` (default true): pip-install an unsatisfied
            ``code/requirements.txt`` before loading the model.
        requirements_dir: ``SMKIT_REQUIREMENTS_DIR``: where those installs go (default: a temp dir).
        access_log: ``SMKIT_ACCESS_LOG`` (default true): one JSON line per request on stderr.
        queue_size: ``SMKIT_QUEUE_SIZE`` (default 100): requests that may wait for a free worker; one
            more is answered 503.
        body_timeout_seconds: ``SMKIT_BODY_TIMEOUT_SECONDS`` (default 60): time for a request body to
            arrive once its headers have; a stalled upload is answered 408 and its connection closed.
        worker_retries: ``SMKIT_WORKER_RETRIES`` (default 3): failed model loads in a row (``model_fn``
            raised, or the worker died while loading) a worker slot retries, after 1, 1, 2, 3, 5, ... s.
        worker_python: ``SMKIT_WORKER_PYTHON``: the interpreter that runs the model workers (default:
            the one running the server), e.g. a venv holding the model's own requirements.
        log_level: ``SAGEMAKER_CONTAINER_LOG_LEVEL`` (Python numeric level or name), default INFO.
        model_dir: ``SM_MODEL_DIR`` or /opt/ml/model, the model the image serves by default.
        framework: ``SMKIT_FRAMEWORK`` (pytorch, xgboost, sklearn, huggingface): that AWS framework image's
            default handlers stand in for missing hooks; None: the toolkit's generic defaults, or the
            Hugging Face ones when ``HF_TASK`` / ``HF_MODEL_ID`` is set (:attr:`huggingface`).
        hf_task: ``HF_TASK``, the transformers pipeline task (else inferred from ``config.json``).
        hf_model_id: ``HF_MODEL_ID``: a folder holding a saved model to load instead of the model data.
        hf_trust_remote_code: ``HF_TRUST_REMOTE_CODE`` (default false).
        batch_size: ``SAGEMAKER_TS_BATCH_SIZE`` (default 1: off): the most requests one
            ``predict_batch_fn`` call serves (docs/handler-semantics.md, dynamic batching).
        max_batch_delay_ms: ``SAGEMAKER_TS_MAX_BATCH_DELAY`` (default 100, as AWS's PyTorch toolkit): the
            longest a batch waits to fill, counted from the arrival of its first request.
        stateful_sessions: ``SAGEMAKER_ENABLE_STATEFUL_SESSIONS`` (default false): answer
            ``{"requestType": "NEW_SESSION" | "CLOSE"}`` and route a session's requests to one worker.
        sessions_expiration_seconds: ``SAGEMAKER_SESSIONS_EXPIRATION`` (default 1200): a session's lifetime.
        sessions_path: ``SAGEMAKER_SESSIONS_PATH``: where each session gets a scratch directory (default
            ``/dev/shm/sagemaker_sessions``, else the temp directory).
    """

    port: int = DEFAULT_PORT
    multi_model: bool = False
    program: str = contract.DEFAULT_PROGRAM
    workers: int | None = None
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    startup_timeout_seconds: float = DEFAULT_STARTUP_TIMEOUT_SECONDS
    default_accept: str = contract.DEFAULT_ACCEPT
    profile: str = "realtime"
    max_payload_bytes: int = 6 * MIB
    batch: bool = False
    batch_strategy: str = "MULTI_RECORD"
    max_concurrent_transforms: int | None = None
    debug: bool = False
    mme_memory_budget_bytes: int = 0
    model_cache_enabled: bool = True
    install_requirements: bool = True
    requirements_dir: str | None = None
    access_log: bool = True
    queue_size: int = DEFAULT_QUEUE_SIZE
    body_timeout_seconds: float = DEFAULT_BODY_TIMEOUT_SECONDS
    worker_retries: int = DEFAULT_WORKER_RETRIES
    worker_python: str | None = None
    log_level: str = "INFO"
    model_dir: str = DEFAULT_MODEL_DIR
    framework: str | None = None
    hf_task: str | None = None
    hf_model_id: str | None = None
    hf_trust_remote_code: bool = False
    batch_size: int = DEFAULT_BATCH_SIZE
    max_batch_delay_ms: float = DEFAULT_MAX_BATCH_DELAY_MS
    stateful_sessions: bool = False
    sessions_expiration_seconds: int = DEFAULT_SESSIONS_EXPIRATION_SECONDS
    sessions_path: str | None = None

    @property
    def batching(self) -> bool:
        """Dynamic batching is on: ``SAGEMAKER_TS_BATCH_SIZE`` above 1."""
        return self.batch_size > 1

    @property
    def huggingface(self) -> bool:
        """The Hugging Face defaults apply: AWS's Hugging Face image, or ``HF_TASK`` / ``HF_MODEL_ID`` set."""
        if self.framework is not None:
            return self.framework == "huggingface"
        return contract.uses_huggingface_defaults(
            {VAR_HF_TASK: self.hf_task or "", VAR_HF_MODEL_ID: self.hf_model_id or ""}
        )

    @property
    def module_name(self) -> str:
        """The handler module's import name (``inference`` for ``inference.py``)."""
        return self.program[:-3] if self.program.endswith(".py") else self.program

    @property
    def max_payload_mb(self) -> int:
        """The payload limit in whole MiB, as ``/execution-parameters`` reports it."""
        return max(1, self.max_payload_bytes // MIB)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> ServingEnv:
        """Read and validate the variables; raise :class:`ServingEnvError` naming a bad one."""
        env = os.environ if environ is None else environ
        profile = _choice(env, VAR_PROFILE, "realtime", tuple(PROFILE_PAYLOAD_LIMITS))
        payload_mb = _number(env, VAR_MAX_PAYLOAD_MB, None, minimum=0.001)
        timeout = _number(env, VAR_TIMEOUT_SECONDS, None, minimum=0.001)
        if timeout is None:
            timeout = _number(env, VAR_TIMEOUT, DEFAULT_TIMEOUT_SECONDS, minimum=0.001)
        budget_mb = _number(env, VAR_MME_BUDGET_MB, None, minimum=1)
        budget = int(budget_mb * MIB) if budget_mb is not None else _default_budget()
        program = env.get(VAR_PROGRAM, "").strip() or contract.DEFAULT_PROGRAM
        if "/" in program or "\\" in program:
            raise ServingEnvError(
                f"{VAR_PROGRAM}={program!r} must be a file name inside model_dir/code, e.g. inference.py"
            )
        level = env.get(VAR_LOG_LEVEL, "").strip() or "INFO"
        batch_size, batch_delay = _batching(env, float(timeout or DEFAULT_TIMEOUT_SECONDS))
        return cls(
            port=int(_int(env, VAR_PORT, DEFAULT_PORT, minimum=1) or DEFAULT_PORT),
            multi_model=_flag(env, VAR_MULTI_MODEL, False),
            program=program,
            workers=_int(env, VAR_WORKERS, None, minimum=1),
            timeout_seconds=float(timeout or DEFAULT_TIMEOUT_SECONDS),
            startup_timeout_seconds=float(
                _number(env, VAR_STARTUP_TIMEOUT, DEFAULT_STARTUP_TIMEOUT_SECONDS, minimum=1)
                or DEFAULT_STARTUP_TIMEOUT_SECONDS
            ),
            default_accept=env.get(VAR_DEFAULT_ACCEPT, "").strip() or contract.DEFAULT_ACCEPT,
            profile=profile,
            max_payload_bytes=(
                int(payload_mb * MIB) if payload_mb is not None else PROFILE_PAYLOAD_LIMITS[profile]
            ),
            batch=_flag(env, VAR_BATCH, False),
            batch_strategy=env.get(VAR_BATCH_STRATEGY, "").strip() or "MULTI_RECORD",
            max_concurrent_transforms=_int(env, VAR_MAX_CONCURRENT_TRANSFORMS, None, minimum=1),
            debug=_flag(env, VAR_DEBUG, False),
            mme_memory_budget_bytes=budget,
            model_cache_enabled=_choice(env, VAR_MODEL_CACHE, "Enabled", ("Enabled", "Disabled"))
            == "Enabled",
            install_requirements=_flag(env, VAR_INSTALL_REQUIREMENTS, True),
            requirements_dir=env.get(VAR_REQUIREMENTS_DIR) or None,
            access_log=_flag(env, VAR_ACCESS_LOG, True),
            queue_size=int(_int(env, VAR_QUEUE_SIZE, DEFAULT_QUEUE_SIZE, minimum=1) or DEFAULT_QUEUE_SIZE),
            body_timeout_seconds=float(
                _number(env, VAR_BODY_TIMEOUT, DEFAULT_BODY_TIMEOUT_SECONDS, minimum=0.001)
                or DEFAULT_BODY_TIMEOUT_SECONDS
            ),
            worker_retries=int(_int(env, VAR_WORKER_RETRIES, DEFAULT_WORKER_RETRIES, minimum=0) or 0),
            worker_python=env.get(VAR_WORKER_PYTHON, "").strip() or None,
            log_level=level.upper() if not level.isdigit() else level,
            model_dir=env.get(VAR_MODEL_DIR, "").strip() or DEFAULT_MODEL_DIR,
            framework=_choice(env, VAR_FRAMEWORK, "", FRAMEWORKS) or None,
            hf_task=env.get(VAR_HF_TASK, "").strip() or None,
            hf_model_id=env.get(VAR_HF_MODEL_ID, "").strip() or None,
            hf_trust_remote_code=_flag(env, VAR_HF_TRUST_REMOTE_CODE, False),
            batch_size=batch_size,
            max_batch_delay_ms=batch_delay,
            stateful_sessions=_flag(env, VAR_ENABLE_STATEFUL_SESSIONS, False),
            sessions_expiration_seconds=int(
                _int(env, VAR_SESSIONS_EXPIRATION, DEFAULT_SESSIONS_EXPIRATION_SECONDS, minimum=1)
                or DEFAULT_SESSIONS_EXPIRATION_SECONDS
            ),
            sessions_path=env.get(VAR_SESSIONS_PATH, "").strip() or None,
        )


def _batching(environ: Mapping[str, str], timeout: float) -> tuple[int, float]:
    """``SAGEMAKER_TS_BATCH_SIZE`` (>= 1) and ``SAGEMAKER_TS_MAX_BATCH_DELAY`` (ms, within the invocation
    timeout: a request waiting for batch-mates longer than it may take in all could never be answered)."""
    raw = environ.get(VAR_BATCH_SIZE, "").strip()
    try:
        size = int(raw) if raw else DEFAULT_BATCH_SIZE
    except ValueError:
        raise ServingEnvError(
            f"{VAR_BATCH_SIZE}={raw!r} is not a whole number; use the most requests one predict_batch_fn "
            f"call may serve, e.g. {VAR_BATCH_SIZE}=8 (1: no batching)"
        ) from None
    if size < 1:
        raise ServingEnvError(
            f"{VAR_BATCH_SIZE}={raw!r} is below 1; use the most requests one predict_batch_fn call may "
            f"serve, e.g. {VAR_BATCH_SIZE}=8, or 1 (or unset) for no batching"
        )
    delay = _number(environ, VAR_MAX_BATCH_DELAY, DEFAULT_MAX_BATCH_DELAY_MS, minimum=0)
    delay = DEFAULT_MAX_BATCH_DELAY_MS if delay is None else delay
    if VAR_MAX_BATCH_DELAY in environ and delay > timeout * 1000:
        raise ServingEnvError(
            f"{VAR_MAX_BATCH_DELAY}={environ[VAR_MAX_BATCH_DELAY]!r} ms is over the invocation timeout of "
            f"{timeout:g} s ({VAR_TIMEOUT_SECONDS}): a request would wait for batch-mates longer than it may "
            f"take in all; use at most {timeout * 1000:g} (a few ms is usual), or raise the timeout"
        )
    return size, delay


def _default_budget() -> int:
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        physical = 4096 * MIB
    return int(physical * 0.7)
