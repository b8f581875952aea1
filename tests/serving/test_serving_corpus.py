"""Published ``inference.py`` files, served by smkit, answer as the official toolkit answered them.

Each case of tests/serving/corpus/cases.py is a handler file as its authors published it (checked here by
its git blob id) with tiny weights built in the test; ``toolkit_answers.json`` holds what sagemaker-inference
1.10.1 on Multi Model Server 1.1.11 answered to every request (``record_toolkit.py`` wrote it once). smkit
must give the same status, and for a success the same Content-Type and body; for an error its message is
the toolkit's (the toolkit's body is the message, a newline and the traceback). The only answers allowed
to differ are the deliberate differences docs/handler-semantics.md lists, each named in corpus/compare.py.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from serving_harness import start_server, wait_ready

sys.path.insert(0, str(Path(__file__).resolve().parent / "corpus"))
from cases import ANSWERS, CASES, HERE, REQUESTS, Case  # noqa: E402
from compare import KIT_PREDICT, UNSUPPORTED_TYPE, difference, same  # noqa: E402

RECORDED: dict[str, Any] = json.loads(ANSWERS.read_text(encoding="utf-8"))


def blob_id(path: Path) -> str:
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_published_handler_file_is_unedited(case: Case) -> None:
    # `make bytecode` (run by `make test`) compiles tests/ too, leaving code/__pycache__ beside the file.
    [handler] = (path for path in (HERE / case.name / "code").iterdir() if path.name != "__pycache__")
    assert handler.name == case.program and case.path.endswith(case.program)
    assert blob_id(handler) == case.blob, f"{handler} differs from {case.source} {case.path}"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_published_handler_answers_as_the_toolkit(case: Case, tmp_path: Path) -> None:
    model = tmp_path / case.name
    shutil.copytree(HERE / case.name / "code", model / "code", ignore=shutil.ignore_patterns("__pycache__"))
    case.build(model)
    server = start_server(
        tmp_path,
        ["--model", str(model), "--workers", "1"],
        env={"SAGEMAKER_PROGRAM": case.program, "SAGEMAKER_MODEL_SERVER_WORKERS": "1"},
        ready=False,
    )
    # Importing scikit-learn on two busy cores can take long: wait as long as the server itself would.
    wait_ready(server, timeout=server.answer_bound(loading=True))
    recorded = RECORDED["cases"][case.name]
    equal, explained, unexplained = [], [], []
    try:
        for request in REQUESTS:
            answer = server.invoke(request.body, request.content_type, request.accept)
            expected = recorded[request.name]
            if same(expected, answer):
                equal.append(request.name)
            elif (why := difference(expected, answer)) is not None:
                explained.append((request.name, why))
            else:
                unexplained.append((request.name, expected, answer.status, answer.body[:300]))
    finally:
        server.stop()
    assert not unexplained, unexplained
    # A handler with only model_fn gets "Please provide a predict_fn" from the toolkit for every request;
    # there smkit's model.predict is what is compared (a listed difference), elsewhere answers must agree.
    assert equal or {why for _, why in explained} == {KIT_PREDICT, UNSUPPORTED_TYPE}, explained
