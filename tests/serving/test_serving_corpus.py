"""Handlers in the shapes users write, served by smkit, answer as the official toolkit answered them.

Each case of tests/serving/corpus/cases.py is a handler file written for these tests in one of the shapes
published SageMaker scikit-learn examples take, with tiny weights built in the test; ``toolkit_answers.json``
holds what sagemaker-inference 1.10.1 on Multi Model Server 1.1.11 answered to every request
(``record_toolkit.py`` wrote it once). smkit must give the same status, and for a success the same
Content-Type and body; for an error its message is the toolkit's (the toolkit's body is the message, a
newline and the traceback). The only answers allowed to differ are the deliberate differences
docs/handler-semantics.md lists, each named in corpus/compare.py, which serves each case and compares.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "corpus"))
from cases import ANSWERS, CASES, HERE, REQUESTS, Case  # noqa: E402
from compare import KIT_PREDICT, UNSUPPORTED_TYPE, serve_and_compare  # noqa: E402

RECORDED: dict[str, Any] = json.loads(ANSWERS.read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_case_holds_its_program_and_was_recorded(case: Case) -> None:
    # `make bytecode` (run by `make test`) compiles tests/ too, leaving code/__pycache__ beside the file.
    [handler] = (path for path in (HERE / case.name / "code").iterdir() if path.name != "__pycache__")
    assert handler.name == case.program, (
        f"{case.name}: {handler.name} is not SAGEMAKER_PROGRAM {case.program}"
    )
    assert set(RECORDED["cases"][case.name]) == {request.name for request in REQUESTS}, (
        f"{case.name}: record_toolkit.py {case.name} records the toolkit's answers to every request"
    )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_handler_answers_as_the_toolkit(case: Case, tmp_path: Path) -> None:
    model = tmp_path / case.name
    shutil.copytree(HERE / case.name / "code", model / "code", ignore=shutil.ignore_patterns("__pycache__"))
    case.build(model)
    comparison = serve_and_compare(tmp_path, model, case.program, RECORDED["cases"][case.name])
    assert not comparison.unexplained, comparison.unexplained
    # A handler with only model_fn gets "Please provide a predict_fn" from the toolkit for every request;
    # there smkit's model.predict is what is compared (a listed difference), elsewhere answers must agree.
    explained = {why for _, why in comparison.explained}
    assert comparison.equal or explained == {KIT_PREDICT, UNSUPPORTED_TYPE}, comparison.explained
