"""Train a tiny text classifier with its own tokenizer, save both with save_pretrained, write the samples.

No inference.py: the container's environment sets ``HF_TASK: text-classification`` (config/<name>.yaml), so
the serving image loads ``transformers.pipeline("text-classification", model=<model dir>)`` and answers
``{"inputs": ..., "parameters": {...}}`` requests as AWS's Hugging Face images do (docs/hugging-face.md).

Replace ``train`` with your own fine-tuning, or put a folder saved with ``model.save_pretrained()`` and
``tokenizer.save_pretrained()`` into ``artifacts/`` and run ``--samples-only`` so that
``samples/expected.json`` holds what your model answers. Everything is built here: no download from the
Hugging Face Hub. Runs in the model's environment: ``make train MODEL=<name>``.
"""

from __future__ import annotations

import json
from pathlib import Path

import samples_io
import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast, pipeline

TASK = "text-classification"
SENTENCES = [
    ("what a wonderful film, i loved it", 1),
    ("the acting was great and the story moving", 1),
    ("a delightful, funny and warm movie", 1),
    ("i enjoyed every minute of it", 1),
    ("a boring, slow and predictable plot", 0),
    ("the worst film i have seen this year", 0),
    ("i hated the ending and the dialogue", 0),
    ("dull characters and a terrible script", 0),
]
SAMPLES = ["i loved the story", "a terrible boring film"]


def tokenizer() -> PreTrainedTokenizerFast:
    """A word-level tokenizer trained on the sentences (your model brings its own)."""
    words = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    words.normalizer = normalizers.Lowercase()
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    words.train_from_iterator((s for s, _ in SENTENCES), trainers.WordLevelTrainer(special_tokens=special))
    return PreTrainedTokenizerFast(
        tokenizer_object=words, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]"
    )


def train(artifacts: Path) -> None:
    """Fit a 2-layer BERT with hidden size 16 for a few steps; save model and tokenizer."""
    torch.manual_seed(0)
    tok = tokenizer()
    config = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        id2label={0: "NEGATIVE", 1: "POSITIVE"},
        label2id={"NEGATIVE": 0, "POSITIVE": 1},
    )
    model = BertForSequenceClassification(config)
    batch = tok([s for s, _ in SENTENCES], padding=True, return_tensors="pt")
    labels = torch.tensor([label for _, label in SENTENCES])
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    model.train()
    for _ in range(60):
        optimizer.zero_grad()
        model(**batch, labels=labels).loss.backward()
        optimizer.step()
    model.eval()
    artifacts.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(artifacts)
    tok.save_pretrained(artifacts)


def write_samples(artifacts: Path, samples: Path) -> None:
    """``request.json`` and ``expected.json``: the pipeline's answer, computed from the saved folder."""
    classify = pipeline(TASK, model=str(artifacts), tokenizer=str(artifacts), device=-1)
    samples.mkdir(parents=True, exist_ok=True)
    (samples / "request.json").write_text(json.dumps({"inputs": SAMPLES}) + "\n")
    samples_io.write_expected(samples, classify(SAMPLES), rtol=1e-4)


if __name__ == "__main__":
    samples_io.main(__doc__, train, write_samples, own_rows=False)
