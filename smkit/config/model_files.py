"""What an LLM engine reads from a model folder or a LoRA adapter, read without the engine.

A Hugging Face model folder (what AWS's vLLM image reads from ``/opt/ml/model``) holds ``config.json`` (the
architecture: layers, heads, context length, dtype), the weights (``*.safetensors``, whose JSON header names
every tensor's dtype and shape: https://huggingface.co/docs/safetensors/index#format) and the tokenizer
files. A PEFT LoRA adapter holds ``adapter_config.json`` (its rank ``r``) and its weights
(https://huggingface.co/docs/peft/developer_guides/checkpoint). Only headers and small JSON files are read,
so a multi-gigabyte folder is looked at in milliseconds.
"""

from __future__ import annotations

import json
import struct
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Files one of which gives the engine its tokenizer (transformers' AutoTokenizer: fast, SentencePiece, BPE,
# WordPiece, tiktoken). https://huggingface.co/docs/transformers/main_classes/tokenizer
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer.model",
    "vocab.json",
    "vocab.txt",
    "spiece.model",
    "tokenizer.tiktoken",
)
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
# Bytes per element of safetensors dtypes and of the dtype names config.json / engines use.
DTYPE_BYTES = {
    "F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
    "U8": 1, "BOOL": 1,
    "float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2,
}  # fmt: skip
# The keys vLLM reads the model's context length from (the smallest present wins), as in vLLM's
# _get_and_verify_max_len: https://github.com/vllm-project/vllm/blob/main/vllm/config/model.py
CONTEXT_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
MAX_JSON_BYTES = (
    16 << 20
)  # config.json / adapter_config.json / a safetensors header larger than this is not read


@dataclass(frozen=True)
class ModelFolder:
    """What a model folder says of itself: its file names, config.json, and its weights (parameters and bytes
    as stored; ``parameters`` None when a weight file has no header to count them from)."""

    files: frozenset[str]
    config: Mapping[str, Any] | None
    weight_bytes: int
    parameters: int | None

    @property
    def has_tokenizer(self) -> bool:
        return any(name in self.files for name in TOKENIZER_FILES)

    def text_config(self) -> Mapping[str, Any]:
        """The language model's part of config.json (multimodal configs nest it under ``text_config``)."""
        config = self.config or {}
        nested = config.get("text_config")
        return {**config, **nested} if isinstance(nested, Mapping) else config

    def context_length(self) -> int | None:
        """The model's context length as vLLM derives it (rope scaling applied), or None when not stated."""
        config = self.text_config()
        found = [config[k] for k in CONTEXT_KEYS if isinstance(config.get(k), int) and config[k] > 0]
        if not found:
            return None
        length = min(found)
        rope = config.get("rope_scaling")
        if isinstance(rope, Mapping):
            kind = rope.get("rope_type", rope.get("type"))
            factor = rope.get("factor")
            if kind not in ("su", "longrope", "llama3", "mrope", "default") and isinstance(
                factor, int | float
            ):
                if kind == "yarn":
                    length = int(rope.get("original_max_position_embeddings", length))
                length = int(length * factor)
        return length

    def kv_bytes_per_token(self, element_bytes: int) -> int | None:
        """Bytes of KV cache one token takes over all layers (keys and values), or None when config.json does not
        give layers, heads and hidden size."""
        config = self.text_config()
        layers = config.get("num_hidden_layers", config.get("n_layer"))
        heads = config.get("num_attention_heads", config.get("n_head"))
        hidden = config.get("hidden_size", config.get("n_embd"))
        if not all(isinstance(x, int) and x > 0 for x in (layers, heads, hidden)):
            return None
        assert isinstance(layers, int) and isinstance(heads, int) and isinstance(hidden, int)
        kv_heads = config.get("num_key_value_heads") or heads
        head_dim = config.get("head_dim") or hidden // heads
        return 2 * layers * int(kv_heads) * int(head_dim) * element_bytes

    def stored_dtype(self) -> str | None:
        config = self.text_config()
        dtype = config.get("torch_dtype", config.get("dtype"))
        return dtype if isinstance(dtype, str) else None

    def quantized(self) -> bool:
        return "quantization_config" in (self.config or {})


def local_path(path: str, base_dir: Path | None) -> Path:
    """``path`` of a config on this machine: as written when absolute (``~`` expanded), else under ``base_dir``."""
    p = Path(path).expanduser()
    return p if p.is_absolute() or base_dir is None else base_dir / p


def _json(path: Path) -> Any:
    if path.stat().st_size > MAX_JSON_BYTES:
        raise ValueError(f"{path.name} is larger than {MAX_JSON_BYTES >> 20} MB")
    return json.loads(path.read_text(encoding="utf-8"))


def safetensors_parameters(path: Path) -> int:
    """Elements of every tensor in a safetensors file, from its header (8-byte little-endian length, JSON)."""
    with path.open("rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        if length > MAX_JSON_BYTES:
            raise ValueError(f"{path.name}: a header of {length} bytes")
        header = json.loads(f.read(length))
    total = 0
    for name, tensor in header.items():
        if name == "__metadata__":
            continue
        count = 1
        for dim in tensor["shape"]:
            count *= int(dim)
        total += count
    return total


def read_model_folder(folder: Path) -> ModelFolder:
    """The model folder at ``folder`` (its top level, as the engine reads ``/opt/ml/model``). ValueError when a
    file it reads is not what its name says."""
    files = frozenset(p.name for p in folder.iterdir() if p.is_file())
    config = None
    if "config.json" in files:
        try:
            config = _json(folder / "config.json")
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"config.json: not JSON ({exc})") from None
    weights = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in WEIGHT_SUFFIXES)
    parameters: int | None = 0
    for path in weights:
        if path.suffix != ".safetensors":
            parameters = None
        elif parameters is not None:
            try:
                parameters += safetensors_parameters(path)
            except (ValueError, KeyError, TypeError, struct.error) as exc:
                raise ValueError(f"{path.name}: not a safetensors file ({exc})") from None
    return ModelFolder(
        files=files,
        config=config if isinstance(config, Mapping) else None,
        weight_bytes=sum(p.stat().st_size for p in weights),
        parameters=parameters if weights else 0,
    )


def adapter_rank(source: Path) -> int:
    """The LoRA rank (``r`` of ``adapter_config.json``) of an adapter folder or ``.tar.gz`` archive.
    ValueError naming what is missing."""
    if source.is_dir():
        config_path = source / "adapter_config.json"
        if not config_path.is_file():
            raise ValueError(f"{source} has no adapter_config.json")
        config = _json(config_path)
    else:
        with tarfile.open(source, "r:*") as tar:
            member = next((m for m in tar if m.isfile() and Path(m.name).name == "adapter_config.json"), None)
            if member is None:
                raise ValueError(f"{source} holds no adapter_config.json")
            if member.size > MAX_JSON_BYTES:
                raise ValueError(f"{source}: adapter_config.json of {member.size} bytes")
            handle = tar.extractfile(member)
            assert handle is not None
            config = json.loads(handle.read())
    rank = config.get("r") if isinstance(config, Mapping) else None
    if not isinstance(rank, int):
        raise ValueError(f"{source}: adapter_config.json gives no rank r")
    return rank
