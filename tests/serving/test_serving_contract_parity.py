"""Differential test: the same session and adapter requests against AWS's reference container
(model-hosting-container-standards with its FastAPI integration) and against smkit's runtime, both on
127.0.0.1; statuses, the session headers and the bodies must agree.

Normalised before comparing: each server's session ids become ``<id>`` (each makes its own), the
``Expires`` time is checked for its format only, and an error's text is FastAPI's ``detail`` there and
smkit's ``message`` here. Where the reference answers with pydantic's own validation dump (a malformed
session or adapter request), the status is compared and smkit's text is checked by
tests/serving/test_serving_sessions.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serving_harness import Response, Server, free_port, start_server
from serving_models import write_model
from waiting import wait_until

pytest.importorskip("model_hosting_container_standards")

HERE = Path(__file__).resolve().parent
HANDLER = """
import json


class Refused(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status_code = status


def model_fn(model_dir):
    return {}


def load_adapter_fn(model, name, src):
    if src.endswith("broken"):
        raise Refused(500, f"no adapter weights at {src}")
    model[name] = src


def unload_adapter_fn(model, name):
    model.pop(name)


def transform_fn(model, data, content_type, accept, context):
    answer = {
        "session": context.session_id,
        "adapter": context.adapter_id,
        "adapter_src": model.get(context.adapter_id) if context.adapter_id else None,
    }
    return json.dumps(answer, separators=(",", ":")), "application/json"
"""
SESSION = "X-Amzn-SageMaker-Session-Id"
ADAPTER = "X-Amzn-SageMaker-Adapter-Identifier"
ALIAS = "X-Amzn-SageMaker-Adapter-Alias"
JSON = {"Content-Type": "application/json"}
EXPIRES = re.compile(r"; Expires=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
NEW = {"requestType": "NEW_SESSION"}
CLOSE = {"requestType": "CLOSE"}
VALIDATION = "<validation error>"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("reference")
    port = free_port()
    env = {
        "SAGEMAKER_ENABLE_STATEFUL_SESSIONS": "true",
        "SAGEMAKER_SESSIONS_PATH": str(root / "sessions"),
        "PYTHONUNBUFFERED": "1",
    }
    log_path = root / "reference.log"
    command = [sys.executable, "-m", "uvicorn", "contract_reference_app:app", "--app-dir", str(HERE)]
    command += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **env})
    server = Server(proc, port, log_path, env)

    def up() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"the reference server exited:\n{log_path.read_text()}")
        return server.try_request("GET", "/ping") is not None

    wait_until(up, timeout=60, what=lambda: log_path.read_text())
    yield server
    proc.terminate()
    proc.wait(timeout=20)


@pytest.fixture(scope="module")
def smkit_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("smkit")
    model = write_model(root, "contract", HANDLER)
    env = {"SAGEMAKER_ENABLE_STATEFUL_SESSIONS": "true", "SAGEMAKER_SESSIONS_PATH": str(root / "sessions")}
    server = start_server(root, ["--model", str(model)], env=env)
    yield server
    server.stop()


class Conversation:
    """One server's side of the scenario: its own session ids, normalised answers."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.ids: dict[str, str] = {}  # the scenario's name of a session -> this server's id

    def send(
        self, method: str, path: str, body: Any = None, *, session: str | None = None, **headers: str
    ) -> dict[str, Any]:
        sent = dict(JSON) if body is not None else {}
        if session is not None:
            sent[SESSION] = self.ids.get(session, session)
        sent.update({name.replace("_", "-"): value for name, value in headers.items()})
        data = json.dumps(body) if body is not None else None
        return self._normalise(self.server.request(method, path, data, sent))

    def _normalise(self, answer: Response) -> dict[str, Any]:
        text = answer.body.decode()
        created = answer.headers.get("x-amzn-sagemaker-new-session-id")
        if created is not None:
            assert EXPIRES.search(created), created
            self.ids[f"s{len(self.ids) + 1}"] = created.split(";")[0]
            created = "<id>" + EXPIRES.sub("; Expires=<time>", created)[len(created.split(";")[0]) :]
        closed = answer.headers.get("x-amzn-sagemaker-closed-session-id")
        for name, session_id in self.ids.items():
            text = text.replace(session_id, f"<{name}>")
            closed = closed.replace(session_id, f"<{name}>") if closed else closed
        if answer.status >= 400:
            payload = json.loads(text)
            text = payload.get("detail", payload.get("message"))
            if text.startswith("[{"):  # pydantic's validation dump: the status is what is compared
                text = VALIDATION
        return {"status": answer.status, "new": created, "closed": closed, "body": text}


# (method, path, body, session, extra headers); a session named "s1" is the first one the server created.
SCENARIO: list[tuple[str, str, Any, str | None, dict[str, str]]] = [
    ("POST", "/invocations", NEW, "NEW_SESSION", {}),
    ("POST", "/invocations", {"prompt": "hi"}, "s1", {}),
    ("POST", "/invocations", {"prompt": "hi"}, "no-such-session", {}),
    ("POST", "/invocations", {"prompt": "hi"}, None, {}),
    ("POST", "/invocations", {"prompt": "hi"}, "NEW_SESSION", {}),
    ("POST", "/invocations", CLOSE, "no-such-session", {}),
    ("POST", "/invocations", CLOSE, None, {}),
    ("POST", "/invocations", {"requestType": "OPEN"}, None, {}),
    ("POST", "/invocations", {"requestType": "NEW_SESSION", "extra": 1}, None, {}),
    ("POST", "/invocations", CLOSE, "s1", {}),
    ("POST", "/invocations", {"prompt": "hi"}, "s1", {}),
    ("POST", "/invocations", CLOSE, "s1", {}),
    ("POST", "/adapters", {"name": "fr", "src": "/adapters/fr"}, None, {}),
    ("POST", "/invocations", {"prompt": "hi"}, None, {ADAPTER: "fr"}),
    ("POST", "/invocations", {"prompt": "hi"}, None, {ADAPTER: "de"}),
    ("POST", "/adapters", {"name": "fr", "src": "/adapters/fr2"}, None, {}),
    ("POST", "/adapters", {"src": "/adapters/x"}, None, {}),
    ("POST", "/adapters", {"name": "", "src": "/adapters/x"}, None, {}),
    ("POST", "/adapters", {"name": "x", "src": "/adapters/broken"}, None, {}),
    ("POST", "/invocations", {"prompt": "hi"}, None, {ADAPTER: "x"}),
    ("POST", "/adapters", {"name": "de", "src": "/adapters/de"}, None, {ALIAS: "german"}),
    ("POST", "/invocations", NEW, "NEW_SESSION", {}),
    ("POST", "/invocations", {"prompt": "hi"}, "s2", {ADAPTER: "de"}),
    ("DELETE", "/adapters/fr", None, None, {}),
    ("DELETE", "/adapters/fr", None, None, {}),
    ("DELETE", "/adapters/de", None, None, {ALIAS: "german"}),
    ("POST", "/invocations", {"prompt": "hi"}, None, {ADAPTER: "fr"}),
    ("POST", "/invocations", CLOSE, "s2", {}),
]


def test_smkit_answers_the_session_and_adapter_api_as_the_reference_does(
    reference: Server, smkit_server: Server
) -> None:
    theirs, ours = Conversation(reference), Conversation(smkit_server)
    differences = []
    for step, (method, path, body, session, headers) in enumerate(SCENARIO, 1):
        expected = theirs.send(method, path, body, session=session, **headers)
        actual = ours.send(method, path, body, session=session, **headers)
        if expected["body"] == VALIDATION and actual["status"] == expected["status"]:
            actual["body"] = VALIDATION  # smkit's own wording is checked in test_serving_sessions.py
        if expected != actual:
            differences.append(
                f"step {step} {method} {path} {body} session={session} {headers}:\n"
                f"  reference {expected}\n  smkit     {actual}"
            )
    assert not differences, "\n".join(differences)
    # Both kept serving.
    assert (
        theirs.send("POST", "/invocations", {})["status"]
        == ours.send("POST", "/invocations", {})["status"]
        == 200
    )
