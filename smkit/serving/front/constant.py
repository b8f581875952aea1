"""A bare "return a constant" model on the same stack: the baseline for ``bench/serving.py``.

``write_constant_model(dest)`` writes a model directory whose ``transform_fn`` ignores the request and
returns a fixed JSON body, so a benchmark can measure the server's own per-request cost.
"""

from __future__ import annotations

from pathlib import Path

CONSTANT_BODY = '{"predictions": [0.0]}'
INFERENCE_PY = f'''"""Bare handler: no model, no decoding, a constant answer."""

BODY = {CONSTANT_BODY!r}


def model_fn(model_dir):
    return None


def transform_fn(model, data, content_type, accept):
    return BODY, "application/json"
'''


def write_constant_model(dest: str | Path) -> Path:
    """Write the constant model into ``dest`` (created) and return it."""
    root = Path(dest)
    (root / "code").mkdir(parents=True, exist_ok=True)
    (root / "code" / "inference.py").write_text(INFERENCE_PY, encoding="utf-8")
    return root
