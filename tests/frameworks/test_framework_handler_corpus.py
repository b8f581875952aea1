"""PyTorch, XGBoost, LightGBM, ONNX Runtime and CatBoost handlers answer from smkit as from the official toolkit.

The cases of tests/serving/corpus/framework_cases.py (a network from a helper module, hooks that take the
context, a ``DMatrix`` and an onnxruntime session with the toolkit's default ``output_fn``, a ``transform_fn``
answering ``(body, content_type)``, a DataFrame with named columns) run in the environment of their
framework with weights trained there; every request of ``cases.REQUESTS`` gets the status, Content-Type and
body Multi Model Server 1.1.11 with sagemaker-inference 1.10.1 gave on the same model
(``toolkit_answers.json``, recorded once by ``record_toolkit.py``), or an answer docs/handler-semantics.md
lists as a deliberate difference.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from framework_harness import write_requirements

from smkit.modelenv import ModelEnvironment
from smkit.scaffold import REQUIREMENTS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serving" / "corpus"))
from cases import ANSWERS, REQUESTS  # noqa: E402
from compare import serve_and_compare  # noqa: E402
from framework_cases import FRAMEWORK_CASES, FrameworkCase  # noqa: E402

pytestmark = pytest.mark.frameworks
RECORDED: dict[str, Any] = json.loads(ANSWERS.read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", FRAMEWORK_CASES, ids=[c.name for c in FRAMEWORK_CASES])
def test_framework_handler_answers_as_the_toolkit(
    case: FrameworkCase, framework_env: Callable[[str], ModelEnvironment], tmp_path: Path
) -> None:
    recorded_with = RECORDED["frameworks"][case.framework]
    assert recorded_with == list(REQUIREMENTS[case.framework]), (
        f"{case.name} was recorded with {recorded_with}, the scaffold now names "
        f"{list(REQUIREMENTS[case.framework])}: run tests/serving/corpus/record_toolkit.py {case.name}"
    )
    environment = framework_env(case.framework)
    model = tmp_path / case.name
    case.build(environment, model)
    write_requirements(model, case.framework)  # the model's requirements: its environment's layer
    recorded = RECORDED["cases"][case.name]
    comparison = serve_and_compare(
        tmp_path,
        model,
        case.program,
        recorded,
        env={"SMKIT_WORKER_PYTHON": environment.python, **environment.environ()},
    )
    equal, explained = comparison.equal, comparison.explained
    print(f"{case.name}: {len(equal)} of {len(REQUESTS)} answers equal, listed differences: {explained}")
    assert not comparison.unexplained, comparison.unexplained
    # Each handler answers some requests with a prediction, and those answers are the toolkit's exactly.
    assert any(recorded[name]["status"] == 200 for name in equal), (equal, explained)
