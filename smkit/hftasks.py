"""Which ``transformers.pipeline`` serves a saved Hugging Face model, and loading it: one rule for all.

Used by the serving runtime's Hugging Face defaults (smkit/serving/worker/huggingface.py) and by the packager's
check, whose probe loads this file by path into the model's environment (so: standard library only, no
smkit imports; transformers and torch are imported when a pipeline is loaded).

Read from aws/sagemaker-huggingface-inference-toolkit ``transformers_utils.py`` (``get_pipeline``,
``infer_task_from_model_architecture``, ``ARCHITECTURES_2_TASK``); docs/hugging-face.md.
"""

from __future__ import annotations

import json
import os
from typing import Any

# config.json architecture suffix -> pipeline task; the longest matching suffix wins (the toolkit lets the
# last match in its table win, which makes TapasForQuestionAnswering plain question answering).
ARCHITECTURES_TO_TASK = {
    "TapasForQuestionAnswering": "table-question-answering",
    "ForQuestionAnswering": "question-answering",
    "ForTokenClassification": "token-classification",
    "ForSequenceClassification": "text-classification",
    "ForMultipleChoice": "multiple-choice",
    "ForMaskedLM": "fill-mask",
    "ForCausalLM": "text-generation",
    "ForConditionalGeneration": "text2text-generation",
    "MTModel": "text2text-generation",
    "EncoderDecoderModel": "text2text-generation",
    "GPT2LMHeadModel": "text-generation",
    "T5WithLMHeadModel": "text2text-generation",
}
# Tasks whose pipeline reads its inputs with a feature extractor rather than a tokenizer.
FEATURE_EXTRACTOR_TASKS = frozenset(
    {
        "automatic-speech-recognition",
        "image-segmentation",
        "image-classification",
        "audio-classification",
        "object-detection",
        "zero-shot-image-classification",
    }
)


class TaskError(ValueError):
    """The model cannot be served by a pipeline as configured; the message names the setting and the fix."""


def model_source(model_dir: str, model_id: str | None) -> str:
    """The folder to load: ``HF_MODEL_ID`` (absolute, or relative to ``model_dir``) when set, else ``model_dir``.

    AWS's images download an ``HF_MODEL_ID`` from the Hugging Face Hub at start; the kit loads local
    folders only (no Hub access from an isolated container, nor from this machine's tests).
    """
    if not model_id:
        return model_dir
    path = os.path.join(model_dir, model_id)  # an absolute model_id stays as it is
    if os.path.isdir(path):
        return path
    raise TaskError(
        f"HF_MODEL_ID={model_id!r} is not a folder here (nor under {model_dir}); the kit does not download "
        "models from the Hugging Face Hub at start. Save the model and its tokenizer with save_pretrained() "
        "into the model data and leave HF_MODEL_ID unset, or name a local folder"
    )


def infer_task(source: str) -> str:
    """The pipeline task of ``source/config.json``'s first architecture."""
    path = os.path.join(source, "config.json")
    if not os.path.isfile(path):
        diffusers = os.path.isfile(os.path.join(source, "model_index.json"))
        what = (
            "a diffusers pipeline (model_index.json), which the kit does not load"
            if diffusers
            else "no config.json"
        )
        raise TaskError(
            f"HF_TASK is not set and {source} holds {what}, so the task cannot be inferred; set HF_TASK "
            "(e.g. text-classification) in the container's environment, or define model_fn in code/inference.py"
        )
    with open(path, encoding="utf-8") as handle:
        architectures = json.load(handle).get("architectures") or [None]
    architecture = architectures[0] or ""
    matches = [suffix for suffix in ARCHITECTURES_TO_TASK if architecture.endswith(suffix)]
    if not matches:
        raise TaskError(
            f"HF_TASK is not set and the task cannot be inferred from the architecture {architecture!r} in "
            f"{path} (known endings: {', '.join(ARCHITECTURES_TO_TASK)}); set HF_TASK in the container's "
            "environment"
        )
    return ARCHITECTURES_TO_TASK[max(matches, key=len)]


def load_pipeline(source: str, task: str, *, trust_remote_code: bool = False) -> Any:
    """``pipeline(task, model=source, tokenizer=source, device=...)`` on GPU 0 when there is one."""
    import torch
    from transformers import pipeline
    from transformers.pipelines import SUPPORTED_TASKS

    if task not in SUPPORTED_TASKS and not task.startswith("translation"):
        raise TaskError(
            f"HF_TASK={task!r} is not a transformers pipeline task; use one of {', '.join(sorted(SUPPORTED_TASKS))}"
        )
    loader = "feature_extractor" if task in FEATURE_EXTRACTOR_TASKS else "tokenizer"
    device = 0 if torch.cuda.is_available() else -1
    return pipeline(
        task=task, model=source, device=device, trust_remote_code=trust_remote_code, **{loader: source}
    )
