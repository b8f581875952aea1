"""The packager's check of a model served by the Hugging Face defaults (no ``model_fn``).

AWS's Hugging Face images, and the kit's image when the container's environment sets ``HF_TASK`` or
``HF_MODEL_ID``, load a ``transformers.pipeline`` over the model data (docs/hugging-face.md). The check
asks the same question as the serving runtime (:mod:`smkit.hftasks`): which folder, which task, and, with
the load check, whether the pipeline loads in the model's environment (a child ``python -I -B``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smkit import hftasks
from smkit.contract import HF_MODEL_ID, HF_TASK, HF_TRUST_REMOTE_CODE, SettingError, read_flag
from smkit.packaging.errors import PackagingError
from smkit.packaging.probe_run import run_probe

PROBE_SOURCE = (Path(__file__).with_name("_hf_probe.py")).read_text(encoding="utf-8")
HANDLER_PROBE = Path(__file__).with_name("_probe.py")  # its _environment() names what ran the check


@dataclass(frozen=True)
class PipelineReport:
    """What the defaults will serve: the task, and (after a load) the pipeline and model classes."""

    task: str
    pipeline: str | None = None
    model: str | None = None
    environment: dict[str, Any] | None = None  # as HandlerReport.environment

    def describe(self) -> str:
        """``the Hugging Face defaults serve pipeline('text-classification') (TextClassificationPipeline ...)``."""
        loaded = f" ({self.pipeline} over {self.model})" if self.pipeline else ""
        return f"the Hugging Face defaults serve pipeline({self.task!r}){loaded}"


def check_pipeline(
    artifacts_dir: Path,
    container_env: Mapping[str, str],
    *,
    load_model: bool,
    python: str,
    extra_paths: tuple[str, ...],
    timeout_s: float,
) -> PipelineReport:
    """Decide the task as the runtime will and, with ``load_model``, load the pipeline; raise when it cannot."""
    label = f"artifacts folder {artifacts_dir}"
    task = container_env.get(HF_TASK, "").strip() or None
    model_id = container_env.get(HF_MODEL_ID, "").strip() or None
    try:  # the runtime's reader (smkit.hosting.env): a value it refuses is refused here too
        trust_remote_code = read_flag(container_env, HF_TRUST_REMOTE_CODE, False)
    except SettingError as exc:
        raise PackagingError(
            label, str(exc), "fix it in model.containers[].environment of the config"
        ) from None
    try:
        source = hftasks.model_source(str(artifacts_dir.resolve()), model_id)
        task = task or hftasks.infer_task(source)
    except hftasks.TaskError as exc:
        raise PackagingError(
            label, str(exc), "set HF_TASK in model.containers[].environment of the config"
        ) from None
    if not load_model:
        return PipelineReport(task)
    request = {
        "hftasks": hftasks.__file__,
        "probe": str(HANDLER_PROBE),
        "model_dir": str(artifacts_dir.resolve()),
        "model_id": model_id,
        "task": task,
        "trust_remote_code": trust_remote_code,
        "extra_paths": list(extra_paths),
    }
    answer = run_probe(
        PROBE_SOURCE,
        request,
        python=python,
        cpu_s=timeout_s,
        label=label,
        doing=f"loading pipeline({task!r})",
        check="pipeline check",
        exit_fix="load it yourself with transformers.pipeline(task, model=FOLDER) to see the error",
    )
    if answer["stage"] != "ok":
        raise PackagingError(
            label,
            f"pipeline({task!r}) does not load from it: {answer['error_type']}: {answer['error']}",
            "save the model and its tokenizer with save_pretrained() into the artifacts folder, list "
            "transformers and torch in code/requirements.txt, and check HF_TASK",
        )
    return PipelineReport(task, answer["pipeline"], answer["model"], answer.get("environment"))
