"""The example model the serving, soak and chaos benchmarks drive: its archive, request and answers.

``make package-model`` builds ``build/model.tar.gz`` from ``model_code/tabular``; its ``samples/`` hold a
CSV request of 10 rows and the predictions expected for it.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

from bench.common import REPO_ROOT, BenchError

DEFAULT_MODEL = REPO_ROOT / "build" / "model.tar.gz"
DEFAULT_PAYLOAD = REPO_ROOT / "model_code" / "tabular" / "samples" / "request.csv"
DEFAULT_EXPECTED = REPO_ROOT / "model_code" / "tabular" / "samples" / "expected.json"


def extract_model(archive: Path, dest: Path) -> Path:
    """Extract the example archive the way SageMaker does before a container starts."""
    if not archive.is_file():
        raise BenchError(f"--model {archive}: no such archive; run `make package-model` first")
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:gz") as tar:
        tar.extractall(dest, filter="data")
    return dest


def load_payload(path: Path, rows: int) -> bytes:
    """The CSV payload; it must have exactly ``rows`` non-empty lines."""
    body = path.read_bytes()
    count = sum(1 for line in body.splitlines() if line.strip())
    if count != rows:
        raise BenchError(f"--payload {path}: {count} rows, expected {rows}; pass a CSV with {rows} lines")
    return body


def check_answer(name: str, body: bytes, expected: list[float] | None) -> bool | None:
    """Whether a model server's JSON predictions match the example's expected values (rtol 1e-6)."""
    if expected is None or name == "constant":
        return None
    try:
        got = json.loads(body)["predictions"]
    except (ValueError, KeyError, TypeError):
        return False
    return len(got) == len(expected) and all(
        abs(a - b) <= 1e-6 * max(abs(b), 1.0) for a, b in zip(got, expected, strict=True)
    )
