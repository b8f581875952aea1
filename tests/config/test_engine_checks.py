"""Engine settings that cannot work are refused at load and at ``smkit synth``, naming the setting, the value
and the fix (smkit/config/engine_checks.py); what cannot be checked here is said.

The configs are the shipped config/llm.yaml as a user edits it. Model folders are written as a Hugging Face
save writes them (config.json, a safetensors header, tokenizer.json), without the engine, by
smkit.llm.tiny: a large model's weights are a sparse file, so its size costs no disk.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from smkit.cli import main
from smkit.config import ConfigError, load_config
from smkit.llm.tiny import LLAMA_2_13B, write_adapter_shape, write_model_shape

ROOT = Path(__file__).resolve().parents[2]
LLM = ROOT / "config" / "llm.yaml"

# The shape of a real checkpoint's config.json (Qwen/Qwen2.5-0.5B-Instruct); Llama-2-13B's is smkit.llm.tiny's.
QWEN_05B = {
    "architectures": ["Qwen2ForCausalLM"],
    "hidden_size": 896,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "num_hidden_layers": 24,
    "max_position_embeddings": 32768,
    "torch_dtype": "bfloat16",
    "vocab_size": 151936,
}


def llm_config(
    tmp_path: Path,
    *,
    model: Path | None = None,
    adapter: Path | None = None,
    env: dict[str, Any] | None = None,
    **variant: Any,
) -> Path:
    """config/llm.yaml with the model folder ``model`` (else its S3 weights), the adapter folder ``adapter``
    (else its S3 archive), engine settings ``env`` (None values removed) and variant fields changed."""
    data = yaml.safe_load(LLM.read_text(encoding="utf-8"))
    container = data["model"]["containers"][0]
    if model is not None:
        container["model_data"] = {"source": "prefix", "path": str(model)}
    if adapter is not None:
        component = data["endpoint"]["inference_components"]["components"][1]
        del component["artifact_url"]
        component["artifact_path"] = str(adapter)
    for name, value in (env or {}).items():
        if value is None:
            container["environment"].pop(name, None)
        else:
            container["environment"][name] = value
    data["endpoint"]["variants"][0].update(variant)
    path = tmp_path / "my-llm.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def refusal(config: Path) -> str:
    with pytest.raises(ConfigError) as err:
        load_config(config)
    return str(err.value)


def test_the_shipped_config_loads_and_says_what_it_could_not_check() -> None:
    notices = load_config(LLM).notices
    assert any("'qwen-support'" in n and "SM_VLLM_MAX_LORA_RANK" in n and "only in S3" in n for n in notices)
    assert any("'qwen'" in n and "only in S3" in n and "GPU memory" in n for n in notices)


# Each misconfiguration that fails the engine at start, as a user writes it: (the config, what the refusal
# names: the setting's path with its value, and the fix). Each is refused by the loader and by `smkit synth`.
Misconfigured = Callable[[Path], Path]


def _lora_off(tmp_path: Path) -> Path:
    return llm_config(tmp_path, env={"SM_VLLM_ENABLE_LORA": None})


def _lora_false(tmp_path: Path) -> Path:
    return llm_config(tmp_path, env={"SM_VLLM_ENABLE_LORA": "false"})


def _runtime_updating_off(tmp_path: Path) -> Path:
    return llm_config(tmp_path, env={"VLLM_ALLOW_RUNTIME_LORA_UPDATING": None})


def _no_config_json(tmp_path: Path) -> Path:
    return llm_config(tmp_path, model=write_model_shape(tmp_path / "qwen", None, 1000))


def _no_tokenizer(tmp_path: Path) -> Path:
    return llm_config(tmp_path, model=write_model_shape(tmp_path / "qwen", QWEN_05B, 1000, tokenizer=False))


def _context_too_long(tmp_path: Path) -> Path:
    model = write_model_shape(tmp_path / "llama", LLAMA_2_13B, 1000)
    return llm_config(tmp_path, model=model, env={"SM_VLLM_MAX_MODEL_LEN": "8192"})


def _larger_than_the_gpu(tmp_path: Path) -> Path:
    # 13 billion 16-bit weights (26 GB) on one A10G of 24 GB.
    model = write_model_shape(tmp_path / "llama", LLAMA_2_13B, 13_000_000_000)
    return llm_config(tmp_path, model=model, env={"SM_VLLM_MAX_MODEL_LEN": "4096"})


def _tensor_parallel_over_the_gpus(tmp_path: Path) -> Path:
    return llm_config(tmp_path, env={"SM_VLLM_TENSOR_PARALLEL_SIZE": "4"})


def _rank_too_small(tmp_path: Path) -> Path:
    adapter = write_adapter_shape(tmp_path / "support", rank=8)
    return llm_config(tmp_path, adapter=adapter, env={"SM_VLLM_MAX_LORA_RANK": "4"})


def _rank_over_the_default(tmp_path: Path) -> Path:
    adapter = write_adapter_shape(tmp_path / "support", rank=32)
    return llm_config(tmp_path, adapter=adapter, env={"SM_VLLM_MAX_LORA_RANK": None})


DRAFT = '{"model": "/opt/ml/model/draft", "num_speculative_tokens": 3}'


def _with_draft(tmp_path: Path, draft: dict[str, Any] | None, *, folder: bool = True) -> Path:
    """A local Qwen-shaped model folder whose ``draft/`` (unless not ``folder``) holds a model of config.json
    ``draft`` (none if None), named by SM_VLLM_SPECULATIVE_CONFIG as AWS's image finds it."""
    model = write_model_shape(tmp_path / "qwen", QWEN_05B, 1000)
    if folder:
        write_model_shape(model / "draft", draft, 100)
    return llm_config(tmp_path, model=model, env={"SM_VLLM_SPECULATIVE_CONFIG": DRAFT})


def _draft_of_another_vocabulary(tmp_path: Path) -> Path:
    return _with_draft(tmp_path, {**LLAMA_2_13B, "num_hidden_layers": 1})


CHANNEL_DRAFT = '{"model": "/opt/ml/additional-model-data-sources/draft", "num_speculative_tokens": 3}'


def _channel_draft_of_another_vocabulary(tmp_path: Path) -> Path:
    """The draft as a channel (a local folder uploaded as it is), as AWS's vLLM image takes one."""
    model = write_model_shape(tmp_path / "qwen", QWEN_05B, 1000)
    write_model_shape(tmp_path / "draft-model", {**LLAMA_2_13B, "num_hidden_layers": 1}, 100)
    path = llm_config(tmp_path, model=model, env={"SM_VLLM_SPECULATIVE_CONFIG": CHANNEL_DRAFT})
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["model"]["containers"][0]["additional_model_data"] = [
        {"channel": "draft", "source": "prefix", "path": "draft-model"}
    ]
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _draft_without_config_json(tmp_path: Path) -> Path:
    return _with_draft(tmp_path, None)


def _draft_folder_missing(tmp_path: Path) -> Path:
    return _with_draft(tmp_path, None, folder=False)


MISCONFIGURED: dict[str, tuple[Misconfigured, tuple[str, ...]]] = {
    "lora-off": (
        _lora_off,
        (
            "model.containers[0].environment.SM_VLLM_ENABLE_LORA: None",
            "adapter component 'qwen-support'",
            'set SM_VLLM_ENABLE_LORA: "true"',
        ),
    ),
    "lora-false": (_lora_false, ("SM_VLLM_ENABLE_LORA: 'false'", 'set SM_VLLM_ENABLE_LORA: "true"')),
    "runtime-updating-off": (
        _runtime_updating_off,
        (
            "model.containers[0].environment.VLLM_ALLOW_RUNTIME_LORA_UPDATING: None",
            "404",
            'set VLLM_ALLOW_RUNTIME_LORA_UPDATING: "true"',
        ),
    ),
    "no-config-json": (
        _no_config_json,
        ("model.containers[0].model_data.path: '", "has no config.json", "save_pretrained()"),
    ),
    "no-tokenizer": (
        _no_tokenizer,
        ("model.containers[0].model_data.path: '", "has no tokenizer files (one of tokenizer.json"),
    ),
    "context-too-long": (
        _context_too_long,
        (
            "model.containers[0].environment.SM_VLLM_MAX_MODEL_LEN: '8192'",
            "longer than the model's context of 4096 tokens",
            'at most "4096"',
        ),
    ),
    "larger-than-the-gpu": (
        _larger_than_the_gpu,
        (
            "endpoint.variants[0].instance_type: 'ml.g5.2xlarge': the model does not fit",
            "24.2 GiB of weights + 3.1 GiB of KV cache for one 4096-token sequence",
            "1 of ml.g5.2xlarge's 1 x 24 GiB A10G GPUs x SM_VLLM_GPU_MEMORY_UTILIZATION 0.9",
            "pick an instance type with more GPU memory (e.g. ml.g7.2xlarge)",
        ),
    ),
    "tensor-parallel-over-the-gpus": (
        _tensor_parallel_over_the_gpus,
        (
            "model.containers[0].environment.SM_VLLM_TENSOR_PARALLEL_SIZE: '4'",
            "ml.g5.2xlarge",
            'at most "1"',
            "ml.g5.12xlarge",
        ),
    ),
    "rank-too-small": (
        _rank_too_small,
        (
            "model.containers[0].environment.SM_VLLM_MAX_LORA_RANK: '4'",
            "adapter component 'qwen-support' has rank 8 (r in its adapter_config.json)",
            'set SM_VLLM_MAX_LORA_RANK: "8" or more',
        ),
    ),
    "draft-of-another-vocabulary": (
        _draft_of_another_vocabulary,
        (
            f"model.containers[0].environment.SM_VLLM_SPECULATIVE_CONFIG: '{DRAFT}'",
            "the draft model /opt/ml/model/draft has a vocabulary of 32000 tokens and the model one of 151936",
            "Target and draft model should have the same vocabulary size",
            "use a draft of the same tokenizer",
        ),
    ),
    "channel-draft-of-another-vocabulary": (
        _channel_draft_of_another_vocabulary,
        (
            f"model.containers[0].environment.SM_VLLM_SPECULATIVE_CONFIG: '{CHANNEL_DRAFT}'",
            "the draft model /opt/ml/additional-model-data-sources/draft has a vocabulary of 32000 tokens",
            "Target and draft model should have the same vocabulary size",
        ),
    ),
    "draft-without-config-json": (
        _draft_without_config_json,
        ("SM_VLLM_SPECULATIVE_CONFIG: '", "/draft) has no config.json", "save_pretrained()"),
    ),
    "draft-folder-missing": (
        _draft_folder_missing,
        ("SM_VLLM_SPECULATIVE_CONFIG: '", "has no folder draft", "holds the draft's config.json"),
    ),
    "rank-over-the-default": (
        _rank_over_the_default,
        (
            "model.containers[0].environment.SM_VLLM_MAX_LORA_RANK: None",
            "has rank 32",
            "(unset: vLLM's default 16)",
            'set SM_VLLM_MAX_LORA_RANK: "32" or more',
        ),
    ),
}


@pytest.mark.parametrize("case", MISCONFIGURED)
def test_refused_by_the_loader(case: str, tmp_path: Path) -> None:
    make, expected = MISCONFIGURED[case]
    message = refusal(make(tmp_path))
    for fragment in expected:
        assert fragment in message, message


@pytest.mark.parametrize("case", MISCONFIGURED)
def test_refused_by_smkit_synth_before_any_cdk(case: str, tmp_path: Path) -> None:
    """``smkit synth`` itself (the command, in this process): the refusal, and nothing written."""
    make, expected = MISCONFIGURED[case]
    out = tmp_path / "cdk.out"
    result = CliRunner().invoke(main, ["synth", "--config", str(make(tmp_path)), "-o", str(out)])
    assert result.exit_code == 1, result.output
    assert "Error: " in result.stderr
    for fragment in expected:
        assert fragment in result.stderr, result.stderr
    assert not out.exists()


def test_a_model_that_fits_loads(tmp_path: Path) -> None:
    model = write_model_shape(tmp_path / "qwen", QWEN_05B, 494_000_000)
    cfg = load_config(llm_config(tmp_path, model=model))
    assert not any("'qwen':" in n for n in cfg.notices)  # the model was checked


def test_a_draft_of_the_same_vocabulary_loads_and_one_in_s3_is_said(tmp_path: Path) -> None:
    load_config(_with_draft(tmp_path / "local", {**QWEN_05B, "num_hidden_layers": 2}))
    notices = load_config(llm_config(tmp_path, env={"SM_VLLM_SPECULATIVE_CONFIG": DRAFT})).notices
    assert any("the draft model /opt/ml/model/draft is in the model data, which is s3" in n for n in notices)


def test_a_draft_is_compared_with_the_model_the_engine_serves(tmp_path: Path) -> None:
    """With SM_VLLM_MODEL naming a Hub model the engine serves that model, not the model data: its vocabulary
    is not known here, so the draft is not compared with the model data's config.json."""
    path = _draft_of_another_vocabulary(tmp_path)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["model"]["containers"][0]["environment"]["SM_VLLM_MODEL"] = "Qwen/Qwen2.5-0.5B-Instruct"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    notices = load_config(path).notices
    assert any("the model comes from SM_VLLM_MODEL=Qwen/Qwen2.5-0.5B-Instruct" in n for n in notices), notices


def test_memory_utilization_decides(tmp_path: Path) -> None:
    # 20 GB of weights fit 24 GB at 0.9, not at 0.5.
    model = write_model_shape(
        tmp_path / "big", {**LLAMA_2_13B, "max_position_embeddings": 2048}, 10_000_000_000
    )
    load_config(llm_config(tmp_path, model=model, env={"SM_VLLM_MAX_MODEL_LEN": "1024"}))
    message = refusal(
        llm_config(
            tmp_path,
            model=model,
            env={"SM_VLLM_MAX_MODEL_LEN": "1024", "SM_VLLM_GPU_MEMORY_UTILIZATION": "0.5"},
        )
    )
    assert "does not fit" in message and "SM_VLLM_GPU_MEMORY_UTILIZATION 0.5" in message


def test_adapter_rank_over_the_engines_maximum(tmp_path: Path) -> None:
    from smkit.config.engine_checks import review

    adapter = write_adapter_shape(tmp_path / "support", rank=8)
    cfg = load_config(llm_config(tmp_path, env={"SM_VLLM_MAX_LORA_RANK": "4"}))
    spec = cfg.endpoint.inference_components
    assert spec is not None
    local = spec.components[1].model_copy(update={"artifact_url": str(adapter)})
    edited = cfg.model_copy(
        update={
            "endpoint": cfg.endpoint.model_copy(
                update={
                    "inference_components": spec.model_copy(
                        update={"components": (spec.components[0], local)}
                    )
                }
            )
        }
    )
    issues = [str(i) for i in review(edited).issues]
    assert any(
        "SM_VLLM_MAX_LORA_RANK: '4'" in i
        and "rank 8 (r in its adapter_config.json)" in i
        and '"8" or more' in i
        for i in issues
    ), issues
    archive = tmp_path / "support.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(adapter, arcname=".")
    archived = local.model_copy(update={"artifact_url": str(archive)})
    edited = edited.model_copy(
        update={
            "endpoint": edited.endpoint.model_copy(
                update={
                    "inference_components": spec.model_copy(
                        update={"components": (spec.components[0], archived)}
                    )
                }
            )
        }
    )
    assert any("rank 8" in str(i) for i in review(edited).issues)


def test_smkit_synth_refuses_before_any_cdk_and_prints_what_it_did_not_check(tmp_path: Path) -> None:
    config = llm_config(tmp_path, env={"SM_VLLM_ENABLE_LORA": None})
    out = tmp_path / "cdk.out"
    result = subprocess.run(
        [sys.executable, "-m", "smkit.cli", "synth", "--config", str(config), "--output", str(out)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0
    assert "SM_VLLM_ENABLE_LORA" in result.stderr and 'set SM_VLLM_ENABLE_LORA: "true"' in result.stderr
    assert not out.exists()


def test_more_full_length_sequences_than_the_kv_cache_holds_is_a_notice(tmp_path: Path) -> None:
    # Qwen2.5-0.5B: 12 KiB of KV cache per token; 32768 tokens per sequence is 0.4 GiB, so ~50 fit in an A10G.
    model = write_model_shape(tmp_path / "qwen", QWEN_05B, 494_000_000)
    cfg = load_config(
        llm_config(
            tmp_path, model=model, env={"SM_VLLM_MAX_MODEL_LEN": "32768", "SM_VLLM_MAX_NUM_SEQS": "256"}
        )
    )
    assert any(
        "room for" in n and "sequences of 32768 tokens, fewer than SM_VLLM_MAX_NUM_SEQS=256" in n
        for n in cfg.notices
    ), cfg.notices
