"""The serving environment, read once into a frozen typed object.

Every ``SAGEMAKER_*`` and ``SMKIT_*`` variable the runtime honours is named in this module or in
:mod:`smkit.contract`. Those that other parts of the kit read from a container's environment too (the
invocation timeout, payload limit, profile, workers, start-up timeout, dynamic batching) are read by
:class:`smkit.contract.RuntimeSettings`, whose values :class:`ServingEnv` carries as ``settings``; this
module reads the rest. Sources: docs/hosting-contract.md (hosting contract, payload limits, toolkit variables),
docs/multi-model.md;
https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-inference-code.html
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from smkit import contract

# Names of the variables only the serving runtime reads. SageMaker's own, and smkit's own that other
# packages set or read too, are defined in smkit.contract and named from there (never re-aliased here).
VAR_DEBUG = "SMKIT_DEBUG"
VAR_MME_BUDGET_MB = "SMKIT_MME_MEMORY_BUDGET_MB"
VAR_INSTALL_REQUIREMENTS = "SMKIT_INSTALL_REQUIREMENTS"
VAR_ACCESS_LOG = "SMKIT_ACCESS_LOG"
VAR_QUEUE_SIZE = "SMKIT_QUEUE_SIZE"
VAR_BODY_TIMEOUT = "SMKIT_BODY_TIMEOUT_SECONDS"
VAR_WORKER_RETRIES = "SMKIT_WORKER_RETRIES"
# GET /metrics (docs/observability.md): on by default; its path; how many multi-model names get a label.
VAR_METRICS = "SMKIT_METRICS"
VAR_METRICS_MAX_MODELS = "SMKIT_METRICS_MAX_MODELS"
DEFAULT_METRICS_PATH = "/metrics"
DEFAULT_METRICS_MAX_MODELS = 32
# Stateful sessions, named as AWS's model-hosting-container-standards package names them
# (docs/sessions-and-adapters.md).
VAR_ENABLE_STATEFUL_SESSIONS = "SAGEMAKER_ENABLE_STATEFUL_SESSIONS"
VAR_SESSIONS_EXPIRATION = "SAGEMAKER_SESSIONS_EXPIRATION"
VAR_SESSIONS_PATH = "SAGEMAKER_SESSIONS_PATH"
DEFAULT_SESSIONS_EXPIRATION_SECONDS = 1200
# Set by the front end for each model worker it starts: what to serve, as JSON (smkit/serving/front/pool.py).
VAR_WORKER_CONFIG = "SMKIT_WORKER_CONFIG"
# No longer read: every worker is a fresh process that loads the model itself. A value set by an older
# deployment is reported once at start (smkit/serving/front/launch.py) and changes nothing.
VAR_LOAD_AFTER_FORK = "SMKIT_LOAD_AFTER_FORK"
# pytorch | xgboost | sklearn | huggingface: apply that AWS framework image's default handlers (the local endpoint sets it
# for configs whose image is one; docs/handler-semantics.md).
# The Hugging Face inference toolkit's variables (docs/hugging-face.md).

DEFAULT_QUEUE_SIZE = 100  # Multi Model Server's default job queue size, as on AWS framework images
DEFAULT_BODY_TIMEOUT_SECONDS = 60.0
DEFAULT_WORKER_RETRIES = 3  # failed loads in a row a worker slot retries (smkit/serving/front/lifecycle.py)

# A serving variable holds a value the runtime cannot use; the message names it, the value and the fix.
ServingEnvError = contract.SettingError
_flag = contract.read_flag
_number = contract.read_number
_int = contract.read_int
_choice = contract.read_choice


@dataclass(frozen=True)
class ServingEnv:
    """Everything the serving runtime reads from the environment.

    Attributes:
        port: ``SAGEMAKER_BIND_TO_PORT`` or 8080.
        multi_model: ``SAGEMAKER_MULTI_MODEL=true`` selects the multi-model container API (docs/multi-model.md).
        program: ``SAGEMAKER_PROGRAM``, the handler module file in ``model_dir/code`` (default inference.py).
        settings: the invocation timeout, payload limit, profile, workers (None: one per CPU the container
            may use, smkit/cpus.py), model start-up timeout and dynamic batching
            (:class:`smkit.contract.RuntimeSettings`); the properties of the same names read them.
        default_accept: ``SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT`` or ``application/json``.
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
        stateful_sessions: ``SAGEMAKER_ENABLE_STATEFUL_SESSIONS`` (default false): answer
            ``{"requestType": "NEW_SESSION" | "CLOSE"}`` and route a session's requests to one worker.
        sessions_expiration_seconds: ``SAGEMAKER_SESSIONS_EXPIRATION`` (default 1200): a session's lifetime.
        sessions_path: ``SAGEMAKER_SESSIONS_PATH``: where each session gets a scratch directory (default
            ``/dev/shm/sagemaker_sessions``, else the temp directory).
        metrics: ``SMKIT_METRICS`` (default true): serve Prometheus metrics and count requests for them;
            false: the path answers 404 as any unknown path does (docs/observability.md).
        metrics_path: ``SMKIT_METRICS_PATH`` (default ``/metrics``, what SageMaker scrapes unless
            ``ContainerMetricsConfig`` names another path).
        metrics_max_models: ``SMKIT_METRICS_MAX_MODELS`` (default 32): multi-model ``TargetModel`` names
            that get a ``model`` label of their own; later ones are counted as ``_other``.
    """

    port: int = contract.DEFAULT_PORT
    multi_model: bool = False
    program: str = contract.DEFAULT_PROGRAM
    settings: contract.RuntimeSettings = field(default_factory=contract.RuntimeSettings)
    default_accept: str = contract.DEFAULT_ACCEPT
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
    model_dir: str = contract.DEFAULT_MODEL_DIR
    framework: str | None = None
    hf_task: str | None = None
    hf_model_id: str | None = None
    hf_trust_remote_code: bool = False
    stateful_sessions: bool = False
    sessions_expiration_seconds: int = DEFAULT_SESSIONS_EXPIRATION_SECONDS
    sessions_path: str | None = None
    metrics: bool = True
    metrics_path: str = DEFAULT_METRICS_PATH
    metrics_max_models: int = DEFAULT_METRICS_MAX_MODELS

    @property
    def workers(self) -> int | None:
        """``SAGEMAKER_MODEL_SERVER_WORKERS`` (:class:`~smkit.contract.RuntimeSettings`)."""
        return self.settings.workers

    @property
    def timeout_seconds(self) -> float:
        """The per-invocation limit (:attr:`smkit.contract.RuntimeSettings.invocation_timeout_s`)."""
        return self.settings.invocation_timeout_s

    @property
    def startup_timeout_seconds(self) -> float:
        """``SAGEMAKER_STARTUP_TIMEOUT``: one model's load limit."""
        return self.settings.startup_timeout_s

    @property
    def profile(self) -> str:
        """``SMKIT_PROFILE``."""
        return self.settings.profile

    @property
    def max_payload_bytes(self) -> int:
        """``SAGEMAKER_MAX_PAYLOAD_IN_MB`` x 1 MiB, else the profile's limit."""
        return self.settings.max_payload_bytes

    @property
    def batch_size(self) -> int:
        """``SAGEMAKER_TS_BATCH_SIZE``."""
        return self.settings.batch_size

    @property
    def max_batch_delay_ms(self) -> float:
        """``SAGEMAKER_TS_MAX_BATCH_DELAY``."""
        return self.settings.max_batch_delay_ms

    @property
    def worker_concurrency(self) -> int:
        """``SMKIT_WORKER_CONCURRENCY`` (default 1): requests one worker runs at once. Above 1 the handler
        declares that its hooks may run side by side (they wait on I/O: a feature store, another endpoint):
        each request runs on a thread of its own, an ``async def`` hook is awaited on the worker's event
        loop (docs/serving-runtime.md, "Handlers that wait")."""
        return self.settings.worker_concurrency

    @property
    def batching(self) -> bool:
        """Dynamic batching is on: ``SAGEMAKER_TS_BATCH_SIZE`` above 1."""
        return self.settings.batching

    @property
    def huggingface(self) -> bool:
        """The Hugging Face defaults apply: AWS's Hugging Face image, or ``HF_TASK`` / ``HF_MODEL_ID`` set."""
        if self.framework is not None:
            return self.framework == "huggingface"
        return contract.uses_huggingface_defaults(
            {contract.HF_TASK: self.hf_task or "", contract.HF_MODEL_ID: self.hf_model_id or ""}
        )

    @property
    def module_name(self) -> str:
        """The handler module's import name (``inference`` for ``inference.py``)."""
        return self.program[:-3] if self.program.endswith(".py") else self.program

    @property
    def max_payload_mb(self) -> int:
        """The payload limit in whole MiB, as ``/execution-parameters`` reports it."""
        return max(1, self.max_payload_bytes // contract.MIB)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> ServingEnv:
        """Read and validate the variables; raise :class:`ServingEnvError` naming a bad one."""
        env = os.environ if environ is None else environ
        settings = contract.RuntimeSettings.from_environment(env)
        budget_mb = _number(env, VAR_MME_BUDGET_MB, None, minimum=1)
        budget = int(budget_mb * contract.MIB) if budget_mb is not None else _default_budget()
        program = env.get(contract.PROGRAM, "").strip() or contract.DEFAULT_PROGRAM
        if "/" in program or "\\" in program:
            raise ServingEnvError(
                contract.PROGRAM,
                program,
                "must be a file name inside model_dir/code",
                "use e.g. inference.py",
            )
        level = env.get(contract.CONTAINER_LOG_LEVEL, "").strip() or "INFO"
        return cls(
            port=int(
                _int(env, contract.BIND_TO_PORT, contract.DEFAULT_PORT, minimum=1) or contract.DEFAULT_PORT
            ),
            multi_model=_flag(env, contract.MULTI_MODEL, False),
            program=program,
            settings=settings,
            default_accept=env.get(contract.DEFAULT_INVOCATIONS_ACCEPT, "").strip()
            or contract.DEFAULT_ACCEPT,
            batch=_flag(env, contract.BATCH, False),
            batch_strategy=env.get(contract.BATCH_STRATEGY, "").strip() or "MULTI_RECORD",
            max_concurrent_transforms=_int(env, contract.MAX_CONCURRENT_TRANSFORMS, None, minimum=1),
            debug=_flag(env, VAR_DEBUG, False),
            mme_memory_budget_bytes=budget,
            model_cache_enabled=_choice(
                env, contract.SMKIT_MODEL_CACHE_SETTING, "Enabled", ("Enabled", "Disabled")
            )
            == "Enabled",
            install_requirements=_flag(env, VAR_INSTALL_REQUIREMENTS, True),
            requirements_dir=env.get(contract.SMKIT_REQUIREMENTS_DIR) or None,
            access_log=_flag(env, VAR_ACCESS_LOG, True),
            queue_size=int(_int(env, VAR_QUEUE_SIZE, DEFAULT_QUEUE_SIZE, minimum=1) or DEFAULT_QUEUE_SIZE),
            body_timeout_seconds=float(
                _number(env, VAR_BODY_TIMEOUT, DEFAULT_BODY_TIMEOUT_SECONDS, minimum=0.001)
                or DEFAULT_BODY_TIMEOUT_SECONDS
            ),
            worker_retries=int(_int(env, VAR_WORKER_RETRIES, DEFAULT_WORKER_RETRIES, minimum=0) or 0),
            worker_python=env.get(contract.SMKIT_WORKER_PYTHON, "").strip() or None,
            log_level=level.upper() if not level.isdigit() else level,
            model_dir=env.get(contract.MODEL_DIR, "").strip() or contract.DEFAULT_MODEL_DIR,
            framework=_choice(env, contract.SMKIT_FRAMEWORK, "", contract.FRAMEWORKS) or None,
            hf_task=env.get(contract.HF_TASK, "").strip() or None,
            hf_model_id=env.get(contract.HF_MODEL_ID, "").strip() or None,
            hf_trust_remote_code=_flag(env, contract.HF_TRUST_REMOTE_CODE, False),
            stateful_sessions=_flag(env, VAR_ENABLE_STATEFUL_SESSIONS, False),
            sessions_expiration_seconds=int(
                _int(env, VAR_SESSIONS_EXPIRATION, DEFAULT_SESSIONS_EXPIRATION_SECONDS, minimum=1)
                or DEFAULT_SESSIONS_EXPIRATION_SECONDS
            ),
            sessions_path=env.get(VAR_SESSIONS_PATH, "").strip() or None,
            metrics=_flag(env, VAR_METRICS, True),
            metrics_path=_metrics_path(
                env.get(contract.SMKIT_METRICS_PATH, "").strip() or DEFAULT_METRICS_PATH
            ),
            metrics_max_models=int(
                _int(env, VAR_METRICS_MAX_MODELS, DEFAULT_METRICS_MAX_MODELS, minimum=1)
                or DEFAULT_METRICS_MAX_MODELS
            ),
        )


# The runtime's own routes: the metrics cannot take one of them.
_RESERVED_PATHS = ("/ping", "/invocations", "/execution-parameters", "/models", "/adapters")


def _metrics_path(path: str) -> str:
    """``SMKIT_METRICS_PATH``, checked as AWS's ``MetricsEndpointPath`` is: a ``/`` then letters, digits,
    ``/``, ``_``, ``-``, ``.``, at most 256 characters
    (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_MetricsEndpoint.html)."""
    if len(path) > 256 or not re.fullmatch(r"/[A-Za-z0-9/_.\-]*", path):
        raise ServingEnvError(
            contract.SMKIT_METRICS_PATH,
            path,
            "must start with / and hold only letters, digits, /, _, - and . (at most 256 characters)",
            "use e.g. SMKIT_METRICS_PATH=/metrics",
        )
    if any(path == p or path.startswith(p + "/") for p in _RESERVED_PATHS):
        raise ServingEnvError(
            contract.SMKIT_METRICS_PATH,
            path,
            "is one of the runtime's own routes",
            "use e.g. SMKIT_METRICS_PATH=/metrics",
        )
    return path


def _default_budget() -> int:
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        physical = 4096 * contract.MIB
    return int(physical * 0.7)
