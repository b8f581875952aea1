"""The JSON Lines batch example: its data shape and the answers its model gives (shared by the batch tests)."""

from __future__ import annotations

import json
import random
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BATCH_DEMO_CODE = REPO / "model_code" / "batch_demo" / "code"
# The example's inputs: two JSON Lines files of 100,000 {"value": n} records, n in 0..3000, over 1 MiB each.
FULL_RECORDS = 100_000
SMALL_RECORDS = 300


def example_values(name: str, count: int) -> list[int]:
    """Deterministic values; testdata1 starts 1, 3, 4, 15, 13 as its sample file."""
    rng = random.Random(name)
    head = [1, 3, 4, 15, 13] if name == "testdata1.jsonl" else [7, 2, 9, 11, 5]
    return head + [rng.randint(0, 3000) for _ in range(count - len(head))]


def write_jsonl(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("testdata1.jsonl", "testdata2.jsonl"):
        lines = [f'{{"value":{v}}}\n' for v in example_values(name, count)]
        (folder / name).write_text("".join(lines))
    return folder


def expected_output(name: str, count: int) -> list[str]:
    """What the example's output_fn answers for each record."""
    return [
        json.dumps({"output": f"I want to {['🍣', '🍵'][v % 2]}"}, ensure_ascii=False)
        for v in example_values(name, count)
    ]
