"""Helpers shared by the example training scripts: sample requests and expected answers.

Every example writes ``samples/request.csv``, ``request.json`` (the same rows as a list of lists),
``request.npy`` (the same rows, float64) and ``expected.json`` (``{"predictions": [...], "rtol": 1e-6}``
plus any extra keys) computed from the model it has just trained. All files are written in a
canonical form so that retraining reproduces them byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

N_SAMPLES = 10
RTOL = 1e-6


def write_samples(samples_dir: Path, rows: np.ndarray, expected: dict[str, Any]) -> None:
    """Write the four sample files for ``rows`` (float64, one request row each)."""
    samples_dir.mkdir(parents=True, exist_ok=True)
    rows = np.asarray(rows, dtype=np.float64)
    lines = [",".join(repr(float(v)) for v in row) for row in rows]
    (samples_dir / "request.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (samples_dir / "request.json").write_text(json.dumps(rows.tolist()) + "\n", encoding="utf-8")
    np.save(samples_dir / "request.npy", rows, allow_pickle=False)
    payload = {**expected, "rtol": RTOL}
    (samples_dir / "expected.json").write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
