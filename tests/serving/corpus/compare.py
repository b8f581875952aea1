"""How smkit's answers to a case are compared with the official stack's recorded ones, and the listed
differences: tests/serving/test_serving_corpus.py and tests/frameworks/test_framework_handler_corpus.py run
:func:`serve_and_compare` on each of their cases."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cases import REQUESTS
from serving_harness import Response, start_server, wait_ready

TRACEBACK = "\nTraceback (most recent call last):"

# docs/handler-semantics.md, "Where smkit differs from the images, on purpose".
UNSUPPORTED_TYPE = "a Content-Type no decoder knows: 415, where the toolkit answers 500"
KIT_PREDICT = "the kit's image calls model.predict when there is no predict_fn; the toolkit asks for one"
UNDECODABLE = "a body its decoder cannot read: 400, where the toolkit answers 500"
COMPACT_JSON = "a dict or list a hook returns is compact JSON; Multi Model Server indents it by 2"


# How Python prints a chained exception's cause; a cause raised where Python has no frames (NumPy's C
# parser) is one ``Type: message`` line just before this.
CHAINED = (
    "\n\nThe above exception was the direct cause of the following exception:\n",
    "\n\nDuring handling of the above exception, another exception occurred:\n",
)


def toolkit_message(text: str) -> str:
    """The message in the toolkit's error body, which is the message, a newline and the traceback."""
    message = text.split(TRACEBACK, 1)[0]
    for link in CHAINED:
        if link in message:
            return message.split(link, 1)[0].rsplit("\n", 1)[0]
    return message


def smkit_message(answer: Response) -> str:
    document = answer.json()
    if isinstance(document, dict) and set(document) == {"code", "type", "message"}:
        return str(document["message"])
    return answer.body.decode()  # a handler's own JSON message, as it wrote it


def difference(recorded: dict[str, Any], answer: Response) -> str | None:
    """Which listed difference explains ``answer`` not being ``recorded`` (None: none does)."""
    message = toolkit_message(recorded.get("text", ""))
    if recorded["status"] == 500 and answer.status == 415 and "is not supported by this framework" in message:
        return UNSUPPORTED_TYPE
    if recorded["status"] == 500 and "Please provide a predict_fn" in message:
        return KIT_PREDICT  # smkit's model.predict answers, or fails as the model does
    if recorded["status"] == answer.status == 200 and recorded["content_type"] == "application/json":
        document = json.loads(answer.body)
        if (
            recorded["text"] == json.dumps(document, indent=2)
            and answer.body == json.dumps(document).encode()
        ):
            return COMPACT_JSON
    if recorded["status"] == 500 and answer.status == 400:
        return UNDECODABLE
    return None


def same(recorded: dict[str, Any], answer: Response) -> bool:
    if answer.status != recorded["status"]:
        return False
    if answer.status != 200:
        return smkit_message(answer) == toolkit_message(recorded["text"])
    media = (recorded["content_type"] or "").split(";")[0].strip()
    if answer.headers.get("content-type", "").split(";")[0].strip() != media:
        return False
    if "base64" in recorded:  # a body that is not UTF-8 text (NPY)
        return base64.b64encode(answer.body).decode() == recorded["base64"]
    return answer.body.decode("utf-8", "replace") == recorded.get("text")


@dataclass
class Comparison:
    """smkit's answers to :data:`cases.REQUESTS` sorted: equal to the recorded one, explained by a listed
    difference (request, difference), or neither (request, recorded answer, status, start of the body)."""

    equal: list[str] = field(default_factory=list)
    explained: list[tuple[str, str]] = field(default_factory=list)
    unexplained: list[tuple[str, dict[str, Any], int, bytes]] = field(default_factory=list)


def serve_and_compare(
    tmp_path: Path, model: Path, program: str, recorded: dict[str, Any], env: dict[str, str] | None = None
) -> Comparison:
    """Serve ``model`` (one worker, ``SAGEMAKER_PROGRAM=program``, ``env`` added), send it every request of
    :data:`cases.REQUESTS` and compare each answer with ``recorded[request]``; the server is stopped after."""
    server = start_server(
        tmp_path,
        ["--model", str(model), "--workers", "1"],
        env={**(env or {}), "SAGEMAKER_PROGRAM": program, "SAGEMAKER_MODEL_SERVER_WORKERS": "1"},
        ready=False,
    )
    comparison = Comparison()
    try:
        # Importing a framework on two busy cores can take long: wait as long as the server itself would.
        wait_ready(server, timeout=server.answer_bound(loading=True))
        for request in REQUESTS:
            answer = server.invoke(request.body, request.content_type, request.accept)
            expected = recorded[request.name]
            if same(expected, answer):
                comparison.equal.append(request.name)
            elif (why := difference(expected, answer)) is not None:
                comparison.explained.append((request.name, why))
            else:
                comparison.unexplained.append((request.name, expected, answer.status, answer.body[:300]))
    finally:
        server.stop()
    return comparison
