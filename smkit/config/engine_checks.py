"""Engine settings checked against the model, its adapters and the instance, before any engine starts.

A setting that cannot work fails an LLM engine tens of seconds into its start, on AWS after the GPU instance is
paid for. :func:`review` refuses, at load (so at ``smkit synth`` too), what the engine would refuse at start,
from the config, the model folder's ``config.json`` and weight headers, the adapters' ``adapter_config.json``
and the instance catalogue (:mod:`smkit.aws.instances`):

- an adapter component on a base whose engine has LoRA off (``SM_VLLM_ENABLE_LORA`` / ``OPTION_ENABLE_LORA``),
  or, on AWS's vLLM image, without ``VLLM_ALLOW_RUNTIME_LORA_UPDATING`` (the image registers an adapter
  component through vLLM's ``/v1/load_lora_adapter``, which vLLM serves only with it:
  https://github.com/aws/model-hosting-container-standards/blob/main/docs/sagemaker/05_lora_adapter_management.md);
- an adapter whose rank exceeds the engine's maximum LoRA rank (vLLM's ``--max-lora-rank``, default 16);
- a model folder without ``config.json`` or tokenizer files;
- a maximum context (``--max-model-len``) longer than the model's;
- a draft model for speculative decoding that vLLM would refuse (:mod:`smkit.config.draft_checks`);
- tensor parallelism over more GPUs than the instance (or the component's reservation) has, and a model whose
  weights plus the KV cache of one full-length sequence exceed the GPU memory times the memory-utilization
  setting: what vLLM checks when it starts (https://docs.vllm.ai/en/latest/configuration/conserving_memory.html).

What cannot be checked because the input is not on this machine (weights or adapters only in S3, a model
archive, a GPU memory the catalogue does not give) is said in a notice, never passed over in silence.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from smkit.aws.instances import NVIDIA_GPU, hosting_instance_types, instance
from smkit.config import draft_checks
from smkit.config.engine_settings import DLC_LORA, engine_repository
from smkit.config.model_files import (
    DTYPE_BYTES,
    TOKENIZER_FILES,
    ModelFolder,
    adapter_rank,
    local_path,
    read_model_folder,
)
from smkit.config.models import DeploymentConfig
from smkit.config.rules import Issue

VLLM_MEMORY = "https://docs.vllm.ai/en/latest/configuration/conserving_memory.html"
VLLM_LORA = "https://docs.vllm.ai/en/latest/features/lora.html"
GIB = 1 << 30
# The engine settings these checks read, per engine image, and vLLM's defaults for them.
NAMES: Mapping[str, Mapping[str, str]] = {
    "vllm": {
        "enable_lora": "SM_VLLM_ENABLE_LORA",
        "max_lora_rank": "SM_VLLM_MAX_LORA_RANK",
        "max_model_len": "SM_VLLM_MAX_MODEL_LEN",
        "tensor_parallel": "SM_VLLM_TENSOR_PARALLEL_SIZE",
        "gpu_memory_utilization": "SM_VLLM_GPU_MEMORY_UTILIZATION",
        "dtype": "SM_VLLM_DTYPE",
        "quantization": "SM_VLLM_QUANTIZATION",
        "max_num_seqs": "SM_VLLM_MAX_NUM_SEQS",
        "model": "SM_VLLM_MODEL",
    },
    "djl-inference": {
        "enable_lora": "OPTION_ENABLE_LORA",
        "max_lora_rank": "OPTION_MAX_LORA_RANK",
        "max_model_len": "OPTION_MAX_MODEL_LEN",
        "tensor_parallel": "OPTION_TENSOR_PARALLEL_DEGREE",
        "gpu_memory_utilization": "OPTION_GPU_MEMORY_UTILIZATION",
        "dtype": "OPTION_DTYPE",
        "quantization": "OPTION_QUANTIZE",
        "max_num_seqs": "OPTION_MAX_ROLLING_BATCH_SIZE",
        "model": "HF_MODEL_ID",
    },
}
DEFAULT_MAX_LORA_RANK = 16
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
RUNTIME_LORA = "VLLM_ALLOW_RUNTIME_LORA_UPDATING"


@dataclass
class Review:
    """What :func:`review` found: problems that refuse the config, and notices of what it could not check."""

    issues: list[Issue] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Engine:
    index: int  # in model.containers
    name: str  # the container's name
    engine: str  # vllm / djl-inference
    environment: Mapping[str, str]

    def path(self, variable: str) -> str:
        return f"model.containers[{self.index}].environment.{variable}"

    def name_of(self, setting: str) -> str:
        return NAMES[self.engine][setting]

    def value(self, setting: str) -> str | None:
        return self.environment.get(self.name_of(setting))

    def on(self, setting: str) -> bool:
        value = self.value(setting)
        return value is not None and value.strip().lower() in ("true", "")


def _engines(cfg: DeploymentConfig) -> dict[str, _Engine]:
    found = {}
    for i, c in enumerate(cfg.model.containers):
        image = cfg.image_of(c)
        engine = engine_repository(image.uri) if image.source == "dlc" else None
        if engine is not None:
            found[c.name] = _Engine(i, c.name, engine, c.environment)
    return found


def _number(engine: _Engine, setting: str, kind: type[int] | type[float], out: Review) -> float | None:
    raw = engine.value(setting)
    if raw is None:
        return None
    try:
        value = kind(raw)
    except ValueError:
        out.issues.append(
            Issue(
                engine.path(engine.name_of(setting)),
                raw,
                f"must be a number ({'whole' if kind is int else 'decimal'})",
            )
        )
        return None
    if value <= 0 or (setting == "gpu_memory_utilization" and value > 1):
        fix = "between 0 and 1 (a fraction of each GPU's memory), e.g. 0.9" if kind is float else "at least 1"
        out.issues.append(Issue(engine.path(engine.name_of(setting)), raw, f"must be {fix}"))
        return None
    return value


def review(cfg: DeploymentConfig, base_dir: Path | None = None) -> Review:
    """Every check of this module on ``cfg``; local paths relative to ``base_dir`` (default: as given)."""
    out = Review()
    engines = _engines(cfg)
    if not engines:
        return out
    _adapters(cfg, engines, base_dir, out)
    for engine in engines.values():
        model = _model(cfg, engine, base_dir, out)
        if engine.engine == "vllm":
            out.issues += draft_checks.check(
                cfg.model.containers[engine.index], engine.index, base_dir, out.notices, model=model
            )
    return out


def check(cfg: DeploymentConfig, base_dir: Path | None = None) -> list[Issue]:
    """The issues of :func:`review`."""
    return review(cfg, base_dir).issues


# --- Adapters -----------------------------------------------------------------------------------------------


def _adapters(
    cfg: DeploymentConfig, engines: Mapping[str, _Engine], base_dir: Path | None, out: Review
) -> None:
    spec = cfg.endpoint.inference_components
    if spec is None:
        return
    by_name = {c.name: c for c in spec.components}
    for i, adapter in enumerate(spec.components):
        base = by_name.get(adapter.base_component or "")
        engine = engines.get(base.container or "") if base is not None else None
        if base is None or engine is None:
            continue  # not an adapter, an unknown base (hosting_rules.adapters), or not an LLM engine image
        what = f"adapter component {adapter.name!r} loads LoRA weights into {base.name!r}'s engine"
        if not engine.on("enable_lora"):
            name = engine.name_of("enable_lora")
            out.issues.append(
                Issue(
                    engine.path(name),
                    engine.value("enable_lora"),
                    f'{what}, which serves no adapter with LoRA off; set {name}: "true" in container '
                    f"{engine.name!r}'s environment ({DLC_LORA})",
                )
            )
        if engine.engine == "vllm" and engine.environment.get(RUNTIME_LORA, "").strip().lower() not in (
            "true",
            "1",
        ):
            out.issues.append(
                Issue(
                    engine.path(RUNTIME_LORA),
                    engine.environment.get(RUNTIME_LORA),
                    f"{what}; AWS's vLLM image registers it through vLLM's /v1/load_lora_adapter, which vLLM "
                    f'answers 404 without this variable; set {RUNTIME_LORA}: "true" in container '
                    f"{engine.name!r}'s environment ({DLC_LORA})",
                )
            )
        _rank(cfg, i, adapter.name, adapter.artifact_path or adapter.artifact_url, engine, base_dir, out)


def _rank(
    cfg: DeploymentConfig,
    index: int,
    name: str,
    artifact: str | None,
    engine: _Engine,
    base_dir: Path | None,
    out: Review,
) -> None:
    setting = engine.name_of("max_lora_rank")
    if artifact is None:
        return
    if artifact.startswith("s3://"):
        out.notices.append(
            f"adapter component {name!r}: its LoRA rank is not checked against {setting} (its weights are only "
            f"in S3: {artifact}); a rank above {setting} fails the adapter's load"
        )
        return
    source = local_path(artifact, base_dir)
    if not source.exists():
        return  # the adapter's own rules name a missing path
    try:
        rank = adapter_rank(source)
    except (ValueError, OSError) as exc:
        out.issues.append(
            Issue(
                f"endpoint.inference_components.components[{index}]."
                f"{'artifact_url' if artifact.startswith('s3://') else 'artifact_path'}",
                artifact,
                f"not a LoRA adapter vLLM can load: {exc}; save it with PEFT's save_pretrained() ({VLLM_LORA})",
            )
        )
        return
    limit = _number(engine, "max_lora_rank", int, out)
    maximum = int(limit) if limit is not None else DEFAULT_MAX_LORA_RANK
    if rank > maximum:
        shown = engine.value("max_lora_rank")
        default = "" if shown is not None else f" (unset: vLLM's default {DEFAULT_MAX_LORA_RANK})"
        out.issues.append(
            Issue(
                engine.path(setting),
                shown,
                f"adapter component {name!r} has rank {rank} (r in its adapter_config.json), more than the engine's "
                f'maximum LoRA rank {maximum}{default}; set {setting}: "{max(rank, 8)}" or more in container '
                f"{engine.name!r}'s environment ({VLLM_LORA})",
            )
        )


# --- The model and the instance -----------------------------------------------------------------------------


def _model(cfg: DeploymentConfig, engine: _Engine, base_dir: Path | None, out: Review) -> ModelFolder | None:
    """Check the model the engine serves; the model folder read here (None: not on this machine, or without
    config.json)."""
    container = cfg.model.containers[engine.index]
    data = container.model_data
    where = f"model.containers[{engine.index}].model_data"
    folder: ModelFolder | None = None
    hub = engine.value("model")
    if hub is not None and not hub.startswith("/opt/ml/model"):
        out.notices.append(
            f"container {engine.name!r}: the model comes from {engine.name_of('model')}={hub}, not from this "
            "machine: config.json, tokenizer, context length and GPU memory are not checked"
        )
    elif data.source == "prefix" and data.path is not None:
        path = local_path(data.path, base_dir)
        if path.is_dir():
            folder = _folder(engine, path, f"{where}.path", data.path, out)
    else:
        kind = (
            f"only in S3 ({data.uri})"
            if data.source == "s3"
            else f"a {data.source} ({data.path}), not unpacked"
        )
        out.notices.append(
            f"container {engine.name!r}: its model is {kind}: config.json, tokenizer files, context length and "
            "the GPU memory the weights need are not checked"
        )
    context = _context(engine, folder, out)
    for yaml_path, instance_type, gpus_reserved in _placements(cfg, engine.name):
        _fit(engine, folder, context, yaml_path, instance_type, gpus_reserved, out)
    return folder


def _folder(engine: _Engine, path: Path, where: str, shown: str, out: Review) -> ModelFolder | None:
    try:
        folder = read_model_folder(path)
    except (ValueError, OSError) as exc:
        out.issues.append(Issue(where, shown, f"the engine cannot read this model folder: {exc}"))
        return None
    if folder.config is None:
        out.issues.append(
            Issue(
                where,
                shown,
                "has no config.json, which the engine reads first (the architecture, layers and context length); "
                "save the model with transformers' save_pretrained() into this folder",
            )
        )
    if not folder.has_tokenizer:
        out.issues.append(
            Issue(
                where,
                shown,
                f"has no tokenizer files (one of {', '.join(TOKENIZER_FILES)}), which the engine loads at start; "
                "save the tokenizer with its save_pretrained() into this folder",
            )
        )
    return folder if folder.config is not None else None


def _context(engine: _Engine, folder: ModelFolder | None, out: Review) -> int | None:
    """The context the engine will run with: the setting, else the model's; refuses one longer than the model's."""
    configured = _number(engine, "max_model_len", int, out)
    model_context = folder.context_length() if folder is not None else None
    if configured is not None and model_context is not None and configured > model_context:
        setting = engine.name_of("max_model_len")
        out.issues.append(
            Issue(
                engine.path(setting),
                engine.value("max_model_len"),
                f"longer than the model's context of {model_context} tokens (config.json max_position_embeddings "
                f'and rope scaling); set {setting} to at most "{model_context}" ({VLLM_MEMORY})',
            )
        )
        return model_context
    return int(configured) if configured is not None else model_context


def _placements(cfg: DeploymentConfig, container: str) -> Iterator[tuple[str, str, int | None]]:
    """(YAML path, instance type, GPUs reserved for one copy or None) where ``container`` runs."""
    ep = cfg.endpoint
    if ep.type == "serverless":
        return
    spec = ep.inference_components
    reserved: int | None = None
    if spec is not None:
        for component in spec.components:
            if component.container == container and component.compute is not None:
                accelerators = component.compute.accelerators
                reserved = int(accelerators) if accelerators is not None else None
    for i, v in enumerate(ep.variants):
        for j, instance_type in enumerate(v.pool_types):
            path = (
                f"endpoint.variants[{i}].instance_pools[{j}].instance_type"
                if v.instance_pools
                else (f"endpoint.variants[{i}].instance_type")
            )
            yield path, instance_type, reserved


def _element_bytes(engine: _Engine, folder: ModelFolder) -> int:
    """Bytes per weight and per KV-cache element the engine runs with: the dtype setting, else the model's
    (vLLM runs a float32 checkpoint in 16 bits unless told otherwise)."""
    dtype = (engine.value("dtype") or "auto").strip().lower()
    if dtype == "auto":
        stored = folder.stored_dtype() or "bfloat16"
        return 2 if stored in ("float32", "float") else DTYPE_BYTES.get(stored, 2)
    return DTYPE_BYTES.get(dtype, 2)


def _fit(
    engine: _Engine,
    folder: ModelFolder | None,
    context: int | None,
    path: str,
    instance_type: str,
    reserved: int | None,
    out: Review,
) -> None:
    hardware = instance(instance_type)
    if hardware is None or hardware.accelerator != NVIDIA_GPU:
        return  # not a GPU type: image rules (CPU image on a GPU) and the type check speak for it
    gpus = hardware.gpus if reserved is None else min(reserved, hardware.gpus)
    tp_setting = engine.name_of("tensor_parallel")
    tp = _number(engine, "tensor_parallel", int, out)
    parallel = int(tp) if tp is not None else 1
    if parallel > gpus:
        held = (
            f"one copy reserves {reserved} of its {hardware.gpus}"
            if reserved is not None and reserved < hardware.gpus
            else f"it has {hardware.gpus}"
        )
        out.issues.append(
            Issue(
                engine.path(tp_setting),
                engine.value("tensor_parallel"),
                f"tensor parallelism over {parallel} GPUs, but {instance_type} ({path}) gives the engine {gpus}: "
                f'{held}; set {tp_setting} to at most "{gpus}", or pick an instance type with {parallel} GPUs '
                f"(e.g. {_with_gpus(parallel, hardware.family)})",
            )
        )
        return
    if folder is None:
        return
    if hardware.gpu_memory_gb is None:
        out.notices.append(
            f"container {engine.name!r} on {instance_type}: the GPU memory of {instance_type} is not in the instance "
            "table (smkit/aws/instance_table.py), so whether the model fits is not checked"
        )
        return
    utilization = _number(engine, "gpu_memory_utilization", float, out) or DEFAULT_GPU_MEMORY_UTILIZATION
    element = _element_bytes(engine, folder)
    quantized = folder.quantized() or engine.value("quantization") is not None
    weights = folder.weight_bytes if quantized or folder.parameters is None else folder.parameters * element
    per_token = folder.kv_bytes_per_token(element)
    kv = per_token * context if per_token is not None and context is not None else 0
    budget = hardware.gpu_memory_gb * GIB // hardware.gpus * parallel * utilization
    if weights + kv <= budget:
        _sequences(engine, instance_type, budget - weights, kv, context, out)
        return
    util_name = engine.name_of("gpu_memory_utilization")
    need = (
        f"{weights / GIB:.1f} GiB of weights"
        + (f" + {kv / GIB:.1f} GiB of KV cache for one {context}-token sequence" if kv else "")
        + f" = {(weights + kv) / GIB:.1f} GiB"
    )
    have = (
        f"{budget / GIB:.1f} GiB ({parallel} of {instance_type}'s {hardware.gpus} x "
        f"{hardware.gpu_memory_gb // hardware.gpus} GiB {hardware.device} GPUs x {util_name} {utilization:g})"
    )
    fixes = [f"pick an instance type with more GPU memory (e.g. {_fitting(weights + kv, utilization)})"]
    if kv and weights <= budget:
        fixes.append(f"lower {engine.name_of('max_model_len')}")
    if parallel < hardware.gpus:
        fixes.append(f"raise {tp_setting} (up to {gpus})")
    out.issues.append(
        Issue(
            path,
            instance_type,
            f"the model does not fit: it needs {need}, more than {have}; {', or '.join(fixes)} ({VLLM_MEMORY})",
        )
    )


def _sequences(
    engine: _Engine, instance_type: str, room: float, per_sequence: int, context: int | None, out: Review
) -> None:
    """A notice when the configured number of sequences, each of the full context, exceeds the KV cache's room:
    the engine starts, and queues (or preempts) what does not fit."""
    configured = _number(engine, "max_num_seqs", int, out)
    if configured is None or not per_sequence:
        return
    fit = int(room // per_sequence)
    if fit < configured:
        out.notices.append(
            f"container {engine.name!r} on {instance_type}: the KV cache has room for {fit} sequences of "
            f"{context} tokens, fewer than {engine.name_of('max_num_seqs')}={int(configured)}; the engine runs "
            "more only while they are shorter, and queues the rest"
        )


def _with_gpus(count: int, family: str) -> str:
    """The smallest hosting type with at least ``count`` NVIDIA GPUs, of ``family`` when it has one."""
    rows = [instance(t) for t in hosting_instance_types()]
    fitting = sorted(
        (r.family != family, r.gpus, r.gpu_memory_gb or 0, r.name)
        for r in rows
        if r is not None and r.gpus >= count
    )
    return fitting[0][3] if fitting else "none listed"


def _fitting(need: float, utilization: float) -> str:
    """The hosting type with the least GPU memory on one GPU that holds ``need`` bytes."""
    rows = [instance(t) for t in hosting_instance_types()]
    fitting = sorted(
        (r.gpu_memory_gb // r.gpus, r.vcpus, r.name)
        for r in rows
        if r is not None
        and r.gpus
        and r.gpu_memory_gb
        and r.gpu_memory_gb * GIB // r.gpus * utilization >= need
    )
    return fitting[0][2] if fitting else "one with several GPUs and tensor parallelism"
