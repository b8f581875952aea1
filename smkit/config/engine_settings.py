"""LLM engine settings: the container Environment variables AWS's LLM images turn into their engine's arguments.

One table, :data:`ENGINE_SETTINGS`, one row per variable, each with the page that documents it:

- AWS's vLLM image (ECR repository ``vllm``): its SageMaker entrypoint turns every ``SM_VLLM_<NAME>`` into
  vLLM's ``--<name>`` flag (lower case, ``_`` -> ``-``); ``true`` is a bare flag, ``false`` leaves it out
  (https://aws.github.io/deep-learning-containers/vllm/configuration/). vLLM rejects a flag it does not
  know, so a misspelt variable fails the endpoint at start on AWS: here it fails at load.
- AWS's LMI image (``djl-inference``): ``OPTION_<NAME>`` and ``HF_MODEL_ID`` configure DJL Serving, whose
  vLLM backend passes them on to vLLM (https://docs.djl.ai/master/docs/serving/serving/docs/lmi/
  user_guides/vllm_user_guide.html).

:func:`engine_arguments` is the translation the local endpoint starts vLLM with (smkit.llm.engine); the
loader applies :func:`check` so a variable of the engine's prefix that the table does not know is an
error at load naming it, never silently dropped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from smkit.config.models import DeploymentConfig
from smkit.config.rules import Issue

DLC_VLLM = "https://aws.github.io/deep-learning-containers/vllm/configuration/"
DLC_LORA = (
    "https://github.com/aws/model-hosting-container-standards/blob/main/docs/sagemaker/"
    "05_lora_adapter_management.md"
)
VLLM_ARGS = "https://docs.vllm.ai/en/latest/configuration/engine_args.html"
VLLM_SPEC = "https://docs.vllm.ai/en/latest/features/spec_decode.html"
LMI_VLLM = "https://docs.djl.ai/master/docs/serving/serving/docs/lmi/user_guides/vllm_user_guide.html"
LMI_CONFIG = "https://docs.djl.ai/master/docs/serving/serving/docs/lmi/deployment_guide/configurations.html"

# ECR repository of an engine image -> the prefix of the variables its entrypoint reads as engine settings.
ENGINE_PREFIXES = {"vllm": "SM_VLLM_", "djl-inference": "OPTION_"}


@dataclass(frozen=True)
class EngineSetting:
    """One variable of an engine image and the vLLM argument it becomes.

    Attributes:
        image: ECR repository of the image that reads it (``vllm``, ``djl-inference``).
        variable: the container Environment variable.
        flag: the vLLM command-line flag it becomes; None: the variable names the model, not a flag.
        kind: ``value`` (``--flag VALUE``) or ``switch`` (``true``: bare ``--flag``; ``false``: left out).
        doc: the page that documents the variable.
    """

    image: str
    variable: str
    flag: str | None
    kind: Literal["value", "switch"]
    doc: str


def _row(
    image: str, variable: str, flag: str | None, kind: Literal["value", "switch"], doc: str
) -> EngineSetting:
    return EngineSetting(image, variable, flag, kind, doc)


ENGINE_SETTINGS: tuple[EngineSetting, ...] = (
    # AWS's vLLM image
    _row("vllm", "SM_VLLM_MODEL", "--model", "value", DLC_VLLM),
    _row("vllm", "SM_VLLM_TENSOR_PARALLEL_SIZE", "--tensor-parallel-size", "value", DLC_VLLM),
    _row("vllm", "SM_VLLM_MAX_MODEL_LEN", "--max-model-len", "value", DLC_VLLM),
    _row("vllm", "SM_VLLM_GPU_MEMORY_UTILIZATION", "--gpu-memory-utilization", "value", DLC_VLLM),
    _row("vllm", "SM_VLLM_ENFORCE_EAGER", "--enforce-eager", "switch", DLC_VLLM),
    _row("vllm", "SM_VLLM_QUANTIZATION", "--quantization", "value", DLC_VLLM),
    _row("vllm", "SM_VLLM_DTYPE", "--dtype", "value", DLC_VLLM),
    _row("vllm", "SM_VLLM_ENABLE_LORA", "--enable-lora", "switch", DLC_LORA),
    _row("vllm", "SM_VLLM_MAX_LORA_RANK", "--max-lora-rank", "value", DLC_LORA),
    _row("vllm", "SM_VLLM_MAX_LORAS", "--max-loras", "value", DLC_LORA),
    _row("vllm", "SM_VLLM_MAX_CPU_LORAS", "--max-cpu-loras", "value", DLC_LORA),
    _row("vllm", "SM_VLLM_MAX_NUM_SEQS", "--max-num-seqs", "value", VLLM_ARGS),
    _row("vllm", "SM_VLLM_MAX_NUM_BATCHED_TOKENS", "--max-num-batched-tokens", "value", VLLM_ARGS),
    _row("vllm", "SM_VLLM_SERVED_MODEL_NAME", "--served-model-name", "value", VLLM_ARGS),
    _row("vllm", "SM_VLLM_ENABLE_PREFIX_CACHING", "--enable-prefix-caching", "switch", VLLM_ARGS),
    _row("vllm", "SM_VLLM_SEED", "--seed", "value", VLLM_ARGS),
    _row("vllm", "SM_VLLM_GENERATION_CONFIG", "--generation-config", "value", VLLM_ARGS),
    _row("vllm", "SM_VLLM_SPECULATIVE_CONFIG", "--speculative-config", "value", VLLM_SPEC),
    # AWS's LMI image (DJL Serving with its vLLM backend)
    _row("djl-inference", "HF_MODEL_ID", "--model", "value", LMI_CONFIG),
    _row("djl-inference", "OPTION_ROLLING_BATCH", None, "value", LMI_VLLM),
    _row("djl-inference", "OPTION_TENSOR_PARALLEL_DEGREE", "--tensor-parallel-size", "value", LMI_CONFIG),
    _row("djl-inference", "OPTION_MAX_MODEL_LEN", "--max-model-len", "value", LMI_VLLM),
    _row("djl-inference", "OPTION_MAX_ROLLING_BATCH_SIZE", "--max-num-seqs", "value", LMI_CONFIG),
    _row("djl-inference", "OPTION_DTYPE", "--dtype", "value", LMI_CONFIG),
    _row("djl-inference", "OPTION_QUANTIZE", "--quantization", "value", LMI_CONFIG),
    _row("djl-inference", "OPTION_GPU_MEMORY_UTILIZATION", "--gpu-memory-utilization", "value", LMI_VLLM),
    _row("djl-inference", "OPTION_ENFORCE_EAGER", "--enforce-eager", "switch", LMI_VLLM),
    _row("djl-inference", "OPTION_ENABLE_LORA", "--enable-lora", "switch", LMI_VLLM),
    _row("djl-inference", "OPTION_MAX_LORAS", "--max-loras", "value", LMI_VLLM),
    _row("djl-inference", "OPTION_MAX_LORA_RANK", "--max-lora-rank", "value", LMI_VLLM),
    _row("djl-inference", "OPTION_MAX_CPU_LORAS", "--max-cpu-loras", "value", LMI_VLLM),
    _row("djl-inference", "OPTION_ENABLE_PREFIX_CACHING", "--enable-prefix-caching", "switch", LMI_VLLM),
)
_BY_VARIABLE = {(row.image, row.variable): row for row in ENGINE_SETTINGS}


class EngineSettingError(ValueError):
    """A variable of the engine's prefix that :data:`ENGINE_SETTINGS` does not know, or a bad switch value."""


def engine_repository(uri: str) -> str | None:
    """``vllm`` / ``djl-inference`` when ``uri`` is one of AWS's LLM engine images, else None."""
    repository = uri.rpartition("/")[2].partition(":")[0].partition("@")[0]
    return repository if repository in ENGINE_PREFIXES else None


def _unknown(image: str, variable: str) -> str:
    known = ", ".join(row.variable for row in ENGINE_SETTINGS if row.image == image)
    prefix = ENGINE_PREFIXES[image]
    return (
        f"the {image} image turns every {prefix}* variable into an engine argument, and {variable} is not one "
        f"smkit knows (a misspelt one fails the engine at start on AWS). Use one of: {known}; or, for an "
        f"engine argument not listed, add a row to smkit.config.engine_settings.ENGINE_SETTINGS with its "
        f"documentation link"
    )


def speculative_problem(value: str) -> str | None:
    """Why vLLM would refuse ``--speculative-config VALUE`` at start, or None: it parses the value as a JSON
    object naming a proposer (``method``, e.g. ``ngram``) or a draft ``model`` (:data:`VLLM_SPEC`)."""
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        return f"vLLM parses --speculative-config as JSON, and this is not JSON ({exc}); {_SPEC_EXAMPLE}"
    if not isinstance(parsed, dict) or not ({"method", "model"} & set(parsed)):
        return f"vLLM takes a JSON object naming a method or a draft model; {_SPEC_EXAMPLE}"
    return None


_SPEC_EXAMPLE = (
    'e.g. {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3} or {"model": '
    '"/opt/ml/model/draft", "num_speculative_tokens": 2} (' + VLLM_SPEC + ")"
)


def _switch(row: EngineSetting, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", ""):
        return True
    if lowered == "false":
        return False
    raise EngineSettingError(f"{row.variable}: {value!r}: a switch takes true or false ({row.doc})")


def engine_arguments(image: str, environment: Mapping[str, str]) -> list[str]:
    """The vLLM arguments the ``image``'s entrypoint derives from ``environment``, in the table's order.

    EngineSettingError for a variable of the image's prefix that the table does not know. Variables that
    name the model (``flag`` None, or ``--model``) are left to the caller, which serves the model folder.
    """
    prefix = ENGINE_PREFIXES[image]
    for name in environment:
        if name.startswith(prefix) and (image, name) not in _BY_VARIABLE:
            raise EngineSettingError(f"{name}: {_unknown(image, name)}")
    arguments: list[str] = []
    for row in ENGINE_SETTINGS:
        if row.image != image or row.variable not in environment or row.flag in (None, "--model"):
            continue
        assert row.flag is not None
        value = environment[row.variable]
        if row.kind == "switch":
            if _switch(row, value):
                arguments.append(row.flag)
        else:
            arguments += [row.flag, value]
    return arguments


def check(cfg: DeploymentConfig) -> Iterable[Issue]:
    """Every container on an engine image: each variable of the engine's prefix is in the table."""
    for i, container in enumerate(cfg.model.containers):
        image = container.image or cfg.image
        if image is None or image.source != "dlc" or (engine := engine_repository(image.uri)) is None:
            continue
        for name, value in container.environment.items():
            path = f"model.containers[{i}].environment.{name}"
            row = _BY_VARIABLE.get((engine, name))
            if name.startswith(ENGINE_PREFIXES[engine]) and row is None:
                yield Issue(path, value, _unknown(engine, name))
            elif row is not None and row.kind == "switch":
                try:
                    _switch(row, value)
                except EngineSettingError as exc:
                    yield Issue(path, value, str(exc).partition(": ")[2].partition(": ")[2])
            elif row is not None and row.variable == "SM_VLLM_SPECULATIVE_CONFIG":
                problem = speculative_problem(value)
                if problem is not None:
                    yield Issue(path, value, problem)
