"""Build a tiny Llama model folder and a LoRA adapter for it, from random weights, with no download.

Run with smkit's interpreter (a pip install of smkit is enough)::

    python -m smkit.llm.tiny OUT_DIR [--draft]

It needs torch, transformers, tokenizers and peft, which the engine environment installs from its lock
(smkit.llm.engine): run where they are missing, it builds (once) or reuses that environment and runs this
file there by its path. The file imports nothing of smkit, so the engine's interpreter, which has no smkit,
runs it as it is. It writes ``OUT_DIR/model`` (``config.json``, ``model.safetensors``, ``tokenizer.json``
with a chat template: the layout AWS's vLLM image reads from ``/opt/ml/model``) and ``OUT_DIR/adapter``
(``adapter_config.json``, ``adapter_model.safetensors``: what PEFT saves and vLLM's LoRA loader reads); with
``--draft`` also ``OUT_DIR/draft``, a 1-layer draft model of the same tokenizer for speculative decoding. The
shapes are the smallest vLLM's CPU attention takes (head size 64: hidden 256 over 4 heads; 16 is refused),
in the architecture of AWS's examples (Llama-style decoder). The tokenizer is a byte-level BPE trained here
on a short text. Weights are seeded, so the folder is the same on every run.

:func:`write_model_shape` and :func:`write_adapter_shape` write folders with a model's shape and no weights,
with the standard library alone: what smkit's checks of a model read (``config.json``, the header of a
safetensors file, ``tokenizer.json``; ``adapter_config.json``: smkit/config/model_files.py), the weights a
sparse file of the model's size, so a model of any size costs no disk and no download.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

HIDDEN = 256
HEADS = 4
LAYERS = 2
VOCAB = 512
CONTEXT = 256  # max_position_embeddings: what a longer SM_VLLM_MAX_MODEL_LEN would be refused against
LORA_RANK = 8
SEED = 1234
# Qwen/ChatML-style template: what /invocations with {"messages": [...]} renders the prompt with.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# The config.json of the model :func:`build` writes: the fields smkit's checks read.
SHAPE = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": HIDDEN,
    "num_attention_heads": HEADS,
    "num_key_value_heads": HEADS,
    "num_hidden_layers": LAYERS,
    "max_position_embeddings": CONTEXT,
    "torch_dtype": "float32",
    "vocab_size": VOCAB,
}
# The same fields of a real checkpoint's config.json (meta-llama/Llama-2-13b-hf): a model larger than one GPU.
LLAMA_2_13B = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 5120,
    "num_attention_heads": 40,
    "num_key_value_heads": 40,
    "num_hidden_layers": 40,
    "max_position_embeddings": 4096,
    "torch_dtype": "float16",
    "vocab_size": 32000,
}
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CORPUS = (
    "SageMaker hosts models behind endpoints. A large language model answers prompts token by token. "
    "Adapters change a base model with low rank weights. The quick brown fox jumps over the lazy dog. "
    "What is deep learning? Deep learning trains neural networks with many layers on data. "
    "Hello, how are you today? I am fine, thank you. Tell me a story about the sea and the stars. "
)


def build_tokenizer(out: Path) -> None:
    """A byte-level BPE tokenizer of :data:`VOCAB` tokens trained on :data:`CORPUS`, saved for transformers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator([CORPUS] * 20, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.model_max_length = CONTEXT
    fast.save_pretrained(out)


def build_model(out: Path) -> None:
    """A 2-layer Llama of random (seeded) weights, saved as safetensors in float32."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    tokenizer = AutoTokenizer.from_pretrained(out)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=HIDDEN,
        intermediate_size=HIDDEN * 2,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=HEADS,
        max_position_embeddings=CONTEXT,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        bos_token_id=None,
        tie_word_embeddings=False,
        torch_dtype="float32",
    )
    model = LlamaForCausalLM(config)
    model.save_pretrained(out, safe_serialization=True)


def build_adapter(model_dir: Path, out: Path) -> None:
    """A LoRA adapter (rank :data:`LORA_RANK` on the attention projections) with random, non-zero weights,
    so that the adapted model answers differently from the base."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaForCausalLM

    torch.manual_seed(SEED + 1)
    base = LlamaForCausalLM.from_pretrained(model_dir)
    config = LoraConfig(
        r=LORA_RANK,
        lora_alpha=2 * LORA_RANK,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
        init_lora_weights=False,  # random A and B (PEFT's default leaves B at zero: no change at all)
        task_type="CAUSAL_LM",
    )
    model = get_peft_model(base, config)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_" in name:
                param.normal_(0.0, 0.5)
    model.save_pretrained(out, safe_serialization=True)


def build_draft(model_dir: Path, out: Path) -> None:
    """A draft model for speculative decoding (vLLM's ``draft_model`` method): the model cut to its first
    layer, keeping its embeddings, final norm and head, with the same tokenizer files (vLLM refuses a draft
    whose vocabulary size differs from the model's). Its greedy choices agree with the model's only partly,
    as a smaller model's do."""
    import shutil

    from transformers import LlamaConfig, LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(model_dir)
    config = LlamaConfig.from_dict({**model.config.to_dict(), "num_hidden_layers": 1})
    draft = LlamaForCausalLM(config)
    layers = tuple(f"model.layers.{i}." for i in range(1, model.config.num_hidden_layers))
    draft.load_state_dict(
        {k: v for k, v in model.state_dict().items() if not k.startswith(layers)}, strict=True
    )
    draft.save_pretrained(out, safe_serialization=True)
    for path in model_dir.iterdir():
        if path.name.startswith("tokenizer") or path.name == "chat_template.jinja":
            shutil.copy(path, out / path.name)


def build(out: Path, *, draft: bool = False) -> dict[str, str]:
    """Write ``out/model`` and ``out/adapter`` (and ``out/draft`` with ``draft``); returns their paths."""
    model_dir, adapter_dir = out / "model", out / "adapter"
    model_dir.mkdir(parents=True, exist_ok=True)
    build_tokenizer(model_dir)
    build_model(model_dir)
    build_adapter(model_dir, adapter_dir)
    paths = {"model": str(model_dir), "adapter": str(adapter_dir)}
    if draft:
        build_draft(model_dir, out / "draft")
        paths["draft"] = str(out / "draft")
    return paths


def write_model_shape(
    folder: Path, config: dict[str, Any] | None, parameters: int, *, tokenizer: bool = True
) -> Path:
    """A model folder as a Hugging Face save writes it, without its weights: ``config.json`` (``config``;
    none if None), ``model.safetensors`` holding one tensor of ``parameters`` bfloat16 weights whose bytes
    are a sparse file (the size without the disk), and ``tokenizer.json`` (unless ``tokenizer`` is False)."""
    folder.mkdir(parents=True)
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config))
    header = json.dumps(
        {"model.weight": {"dtype": "BF16", "shape": [parameters], "data_offsets": [0, 2 * parameters]}}
    ).encode()
    with (folder / "model.safetensors").open("wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)  # safetensors: 8-byte little-endian length, JSON
        f.truncate(8 + len(header) + 2 * parameters)
    if tokenizer:
        (folder / "tokenizer.json").write_text(json.dumps({"version": "1.0", "model": {"type": "BPE"}}))
    return folder


def write_adapter_shape(folder: Path, rank: int = LORA_RANK) -> Path:
    """A LoRA adapter folder as PEFT saves it, without its weights: ``adapter_config.json`` of rank ``rank``
    and an empty ``adapter_model.safetensors``."""
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text(
        json.dumps({"peft_type": "LORA", "r": rank, "lora_alpha": 2 * rank})
    )
    (folder / "adapter_model.safetensors").write_bytes(b"")
    return folder


# What the builder imports; all are in the engine environment's lock.
NEEDS = ("torch", "transformers", "tokenizers", "peft")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("out", type=Path, help="directory to write model/ and adapter/ into")
    parser.add_argument("--draft", action="store_true", help="also write draft/, a 1-layer draft model")
    args = parser.parse_args()
    if any(importlib.util.find_spec(name) is None for name in NEEDS):
        # smkit's own interpreter: run this file in the engine environment (-I: nothing of this one leaks in).
        from smkit.llm.engine import engine_python

        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        command = [engine_python(), "-I", str(Path(__file__).resolve()), str(args.out.resolve())]
        command += ["--draft"] if args.draft else []
        raise SystemExit(subprocess.run(command, env=env, check=False).returncode)
    print(json.dumps(build(args.out, draft=args.draft)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
