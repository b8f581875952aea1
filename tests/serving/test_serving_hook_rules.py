"""One hook rule for the packager and the runtime: the same signatures, the same verdict.

Each case is an ``inference.py`` whose hooks use one signature a user may write. The packager's check
(``check_handler``, which imports the module in a child interpreter) and the runtime (``ModelHandler``,
which binds the hooks and answers a request) must both accept it, or both refuse it. Accepted cases answer
a real request and report whether the hook received the context. The three signatures that once passed
the packager and failed at serving are then packaged, served by a real runtime process and invoked.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from serving_harness import start_server

from smkit.hooks import HookSignatureError
from smkit.hosting.env import ServingEnv
from smkit.packaging import PackagingError, build_archive
from smkit.packaging.handler_check import check_handler
from smkit.serving.worker.handler import ModelHandler

BASE = {
    "model_fn": "def model_fn(model_dir):\n    return {'scale': 2}\n",
    "input_fn": "def input_fn(input_data, content_type):\n    return json.loads(input_data)\n",
    "predict_fn": "def predict_fn(data, model):\n    return [x * model['scale'] for x in data]\n",
    "output_fn": "def output_fn(prediction, accept):\n    return json.dumps({'out': prediction, 'seen': SEEN}), 'application/json'\n",
}


@dataclass(frozen=True)
class Case:
    """One hook replaced by ``source``; ``context`` None means both sides must refuse it."""

    id: str
    hook: str
    source: str
    context: bool | None

    def module(self) -> str:
        hooks = {**BASE, self.hook: textwrap.dedent(self.source)}
        return "import json\n\nSEEN = {}\n\n" + "\n".join(hooks.values())


CASES = [
    Case(
        "predict_fn with context and a defaulted flag",
        "predict_fn",
        """
        def predict_fn(data, model, context, debug=False):
            SEEN['predict_fn'] = context is not None
            return [x * model['scale'] for x in data]
        """,
        True,
    ),
    Case(
        "input_fn with a keyword-only option",
        "input_fn",
        """
        def input_fn(input_data, content_type, *, strict=False):
            SEEN['input_fn'] = strict
            return json.loads(input_data)
        """,
        False,
    ),
    Case(
        "model_fn with **kwargs",
        "model_fn",
        """
        def model_fn(model_dir, **kw):
            SEEN['model_fn'] = sorted(kw)
            return {'scale': 2}
        """,
        False,
    ),
    Case(
        "input_fn with an optional context",
        "input_fn",
        """
        def input_fn(input_data, content_type, context=None):
            SEEN['input_fn'] = context is not None
            return json.loads(input_data)
        """,
        True,
    ),
    Case(
        "model_fn with a required context",
        "model_fn",
        """
        def model_fn(model_dir, context):
            SEEN['model_fn'] = context is not None
            return {'scale': 2}
        """,
        True,
    ),
    Case(
        "positional-only output_fn with context",
        "output_fn",
        """
        def output_fn(prediction, accept, context, /):
            SEEN['output_fn'] = context is not None
            return json.dumps({'out': prediction, 'seen': SEEN}), 'application/json'
        """,
        True,
    ),
    Case(
        "predict_fn(*args)",
        "predict_fn",
        """
        def predict_fn(*args):
            SEEN['predict_fn'] = len(args)
            data, model = args
            return [x * model['scale'] for x in data]
        """,
        False,
    ),
    Case("output_fn missing accept", "output_fn", "def output_fn(prediction):\n    return '[]'\n", None),
    Case(
        "output_fn with accept keyword-only",
        "output_fn",
        "def output_fn(prediction, *, accept):\n    return '[]'\n",
        None,
    ),
    Case(
        "predict_fn with two required extras",
        "predict_fn",
        "def predict_fn(data, model, context, extra):\n    return data\n",
        None,
    ),
    Case(
        "input_fn with one parameter", "input_fn", "def input_fn(input_data):\n    return input_data\n", None
    ),
]


def _write(case: Case, root: Path) -> tuple[Path, Path, Path]:
    """The model directory as the runtime sees it, its ``code/``, and an empty artifacts folder."""
    code = root / "model" / "code"
    code.mkdir(parents=True)
    (code / "inference.py").write_text(case.module())
    (code / "requirements.txt").write_text("")
    (root / "artifacts").mkdir()
    return root / "model", code, root / "artifacts"


def _packager_verdict(code: Path, artifacts: Path) -> str | None:
    """None when the packager accepts the handler, else its message."""
    try:
        check_handler(code, artifacts)
    except PackagingError as exc:
        return str(exc)
    return None


def _runtime_verdict(model_dir: Path) -> tuple[str | None, dict[str, object]]:
    """None and the answer to one request when the runtime accepts the handler, else its message."""
    handler = ModelHandler(
        name=model_dir.name, model_dir=str(model_dir), env=ServingEnv.from_environ({}), isolated=True
    )
    try:
        handler.load()
    except HookSignatureError as exc:
        return str(exc), {}
    reply = handler.invoke(b"[1, 2]", {"Content-Type": "application/json", "Accept": "application/json"})
    assert reply.status == 200, reply.body
    return None, json.loads(reply.body)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_packager_and_runtime_give_the_same_verdict(case: Case, tmp_path: Path) -> None:
    model_dir, code, artifacts = _write(case, tmp_path)
    packager = _packager_verdict(code, artifacts)
    runtime, answer = _runtime_verdict(model_dir)
    if case.context is None:
        assert packager is not None and runtime is not None, (packager, runtime)
        # Both name the hook and the call it must accept.
        assert f"{case.hook}: " in packager and f"{case.hook}: " in runtime
        assert packager.split(f"{case.hook}: ", 1)[1] == runtime.split(f"{case.hook}: ", 1)[1]
        return
    assert packager is None and runtime is None, (packager, runtime)
    assert answer["out"] == [2, 4]
    seen = answer["seen"]
    assert isinstance(seen, dict)
    if case.hook == "predict_fn" and not case.context:
        assert seen["predict_fn"] == 2  # *args got the two base arguments only
    elif case.hook == "model_fn" and not case.context:
        assert seen["model_fn"] == []  # **kw got nothing
    elif case.hook == "input_fn" and not case.context:
        assert seen["input_fn"] is False  # strict kept its default
    else:
        assert seen[case.hook] is True


WHY = [
    c
    for c in CASES
    if c.id.startswith(("predict_fn with context", "input_fn with a keyword", "model_fn with **"))
]


@pytest.mark.parametrize("case", WHY, ids=[c.id for c in WHY])
def test_signature_is_packaged_served_and_answers(case: Case, tmp_path: Path) -> None:
    _, code, artifacts = _write(case, tmp_path)
    archive = tmp_path / "model.tar.gz"
    build_archive(code, artifacts, archive)
    server = start_server(tmp_path, ["--model", str(archive)], env={"SAGEMAKER_MODEL_SERVER_WORKERS": "1"})
    try:
        reply = server.invoke("[1, 2]", content_type="application/json", accept="application/json")
        assert reply.status == 200, reply.body
        assert reply.json()["out"] == [2, 4]
    finally:
        assert server.stop() == 0
