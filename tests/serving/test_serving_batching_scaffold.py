"""The scaffolded handlers' ``predict_batch_fn`` (smkit/scaffold/templates): one model call for a batch of
requests, split back per request, and a bad request failing alone. Run in-process on the scikit-learn
template with a real fitted model, as the serving runtime calls it."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import joblib
import numpy as np
import pytest
from sklearn.ensemble import RandomForestRegressor

TEMPLATES = Path(__file__).resolve().parents[2] / "smkit" / "scaffold" / "templates"


@pytest.fixture
def sklearn_handler(tmp_path: Path) -> Iterator[tuple[ModuleType, object]]:
    code = tmp_path / "code"
    code.mkdir()
    shutil.copy(TEMPLATES / "sklearn" / "inference.py", code / "inference.py")
    shutil.copy(TEMPLATES / "common" / "rows.py", code / "rows.py")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4))
    joblib.dump(
        RandomForestRegressor(n_estimators=5, random_state=0).fit(x, x.sum(axis=1)), tmp_path / "model.joblib"
    )
    sys.path.insert(0, str(code))
    try:
        spec = importlib.util.spec_from_file_location("scaffold_inference", code / "inference.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module, module.model_fn(str(tmp_path))
    finally:
        sys.path.remove(str(code))
        sys.modules.pop("rows", None)


def test_the_batch_answers_as_each_request_alone(sklearn_handler: tuple[ModuleType, object]) -> None:
    handler, model = sklearn_handler
    bodies = ["0.1,0.2,0.3,0.4\n", "1,1,1,1\n2,2,2,2\n", "[[0.5, 0.5, 0.5, 0.5]]"]
    types = ["text/csv", "text/csv", "application/json"]
    inputs = [handler.input_fn(b, t) for b, t in zip(bodies, types, strict=True)]
    batched = handler.predict_batch_fn(inputs, model)
    assert len(batched) == 3
    for data, prediction in zip(inputs, batched, strict=True):
        assert np.array_equal(prediction, handler.predict_fn(data, model))
    assert [len(p) for p in batched] == [1, 2, 1]


def test_a_request_with_another_column_count_fails_alone(sklearn_handler: tuple[ModuleType, object]) -> None:
    handler, model = sklearn_handler
    inputs = [handler.input_fn("1,2,3,4\n", "text/csv"), handler.input_fn("1,2\n", "text/csv")]
    good, bad = handler.predict_batch_fn(inputs, model)
    assert handler.output_fn(good, "application/json")[1] == "application/json"
    with pytest.raises(ValueError, match="features"):
        handler.output_fn(bad, "application/json")
