"""Stateful sessions and the LoRA adapter API of the serving runtime, over real sockets on 127.0.0.1."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from serving_harness import Server, start_server
from serving_models import write_model
from waiting import wait_until

HANDLER = """
import json
import os


def model_fn(model_dir):
    return {"sessions": {}, "adapters": {}, "closed": []}


def session_start_fn(model, session_id, context):
    assert os.path.isdir(context.session_dir)
    model["sessions"][session_id] = 0


def session_close_fn(model, session_id):
    model["sessions"].pop(session_id)
    model["closed"].append(session_id)


def load_adapter_fn(model, name, src):
    if src.endswith("broken"):
        raise ValueError(f"no adapter weights at {src}")
    if src.endswith(".once"):  # the first worker to load it wins, every other one fails
        try:
            os.close(os.open(src, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            raise ValueError(f"{src} is taken by another worker") from None
    model["adapters"][name] = src


def unload_adapter_fn(model, name):
    if name == "pinned":
        raise ValueError("adapter pinned is in use")
    model["adapters"].pop(name)


def transform_fn(model, data, content_type, accept, context):
    if json.loads(data).get("die"):
        os._exit(3)
    session = context.session_id
    if session is not None:
        model["sessions"][session] += 1
    answer = {
        "pid": os.getpid(),
        "session": session,
        "turn": model["sessions"].get(session),
        "adapter": context.adapter_id,
        "adapter_src": model["adapters"].get(context.adapter_id),
        "closed": model["closed"],
        "loaded": sorted(model["adapters"]),
    }
    return json.dumps(answer), "application/json"
"""
NEW = json.dumps({"requestType": "NEW_SESSION"})
CLOSE = json.dumps({"requestType": "CLOSE"})
JSON = {"Content-Type": "application/json"}
SESSION = "X-Amzn-SageMaker-Session-Id"
ADAPTER = "X-Amzn-SageMaker-Adapter-Identifier"
NEW_SESSION_HEADER = re.compile(r"^([a-zA-Z0-9](-*[a-zA-Z0-9])*); Expires=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("sessions")
    model = write_model(root, "stateful", HANDLER)
    env = {"SAGEMAKER_ENABLE_STATEFUL_SESSIONS": "true", "SAGEMAKER_SESSIONS_PATH": str(root / "state")}
    server = start_server(root, ["--model", str(model)], env=env)
    yield server
    server.stop()


def _new_session(server: Server) -> str:
    created = server.request("POST", "/invocations", NEW, {**JSON, SESSION: "NEW_SESSION"})
    assert created.status == 200, created.body
    match = NEW_SESSION_HEADER.match(created.headers["x-amzn-sagemaker-new-session-id"])
    assert match, created.headers
    assert created.body == f"Session {match.group(1)} created".encode()
    return match.group(1)


def _ask(server: Server, headers: dict[str, str] | None = None) -> dict[str, object]:
    answer = server.request("POST", "/invocations", "{}", {**JSON, **(headers or {})})
    assert answer.status == 200, answer.body
    result: dict[str, object] = answer.json()
    return result


def test_a_session_stays_on_one_worker_and_closes(server: Server, tmp_path: Path) -> None:
    session = _new_session(server)
    answers = [_ask(server, {SESSION: session}) for _ in range(6)]
    assert {a["pid"] for a in answers} == {answers[0]["pid"]}  # the worker that holds the session
    assert [a["turn"] for a in answers] == [1, 2, 3, 4, 5, 6]  # its state, in that worker's memory
    assert all(a["session"] == session for a in answers)
    assert Path(server.env["SAGEMAKER_SESSIONS_PATH"], session).is_dir()

    closed = server.request("POST", "/invocations", CLOSE, {**JSON, SESSION: session})
    assert closed.status == 200
    assert closed.headers["x-amzn-sagemaker-closed-session-id"] == session
    assert closed.body == f"Session {session} closed".encode()
    assert not Path(server.env["SAGEMAKER_SESSIONS_PATH"], session).exists()
    after = server.request("POST", "/invocations", "{}", {**JSON, SESSION: session})
    assert after.status == 400 and after.json()["message"] == f"Bad request: session not found: {session}"


def test_sessions_spread_over_the_workers(server: Server) -> None:
    sessions = [_new_session(server) for _ in range(2)]
    pids = {_ask(server, {SESSION: s})["pid"] for s in sessions}
    assert len(pids) == 2  # round robin over the 2 ready workers
    for session in sessions:
        assert server.request("POST", "/invocations", CLOSE, {**JSON, SESSION: session}).status == 200


def test_unknown_session_id_is_400_and_the_server_keeps_serving(server: Server) -> None:
    answer = server.request("POST", "/invocations", "{}", {**JSON, SESSION: "no-such-session"})
    assert answer.status == 400
    assert answer.json()["message"] == "Bad request: session not found: no-such-session"
    close = server.request("POST", "/invocations", CLOSE, {**JSON, SESSION: "no-such-session"})
    assert close.status == 400 and "session not found: no-such-session" in close.json()["message"]
    assert _ask(server)["session"] is None  # no session header: any worker, no session
    assert _ask(server, {SESSION: "NEW_SESSION"})["session"] is None  # the constant alone is no session
    assert server.request("GET", "/ping").status == 200


def test_close_without_a_session_id_is_424(server: Server) -> None:
    answer = server.request("POST", "/invocations", CLOSE, JSON)
    assert answer.status == 424
    assert answer.json()["message"] == "Failed to close session: invalid session_id: None"


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"requestType": "OPEN"}, "requestType 'OPEN' is not NEW_SESSION or CLOSE"),
        ({"requestType": "NEW_SESSION", "extra": 1}, "unexpected keys ['extra']"),
    ],
)
def test_a_malformed_session_request_is_400(server: Server, body: dict[str, object], problem: str) -> None:
    answer = server.request("POST", "/invocations", json.dumps(body), JSON)
    assert answer.status == 400
    assert answer.json()["message"] == (
        f"invalid session request: {problem}; send exactly "
        '{"requestType": "NEW_SESSION"} or {"requestType": "CLOSE"}'
    )


def test_adapters_register_select_and_unregister_in_every_worker(server: Server) -> None:
    registered = server.request("POST", "/adapters", json.dumps({"name": "fr", "src": "/adapters/fr"}), JSON)
    assert registered.status == 200 and registered.body == b"Adapter fr registered"
    # One session per worker: the adapter reached both.
    sessions = [_new_session(server) for _ in range(2)]
    answers = [_ask(server, {SESSION: s, ADAPTER: "fr"}) for s in sessions]
    assert len({a["pid"] for a in answers}) == 2
    assert all(a["adapter"] == "fr" and a["adapter_src"] == "/adapters/fr" for a in answers)

    unknown = server.request("POST", "/invocations", "{}", {**JSON, ADAPTER: "de"})
    assert unknown.status == 404 and unknown.json()["message"] == "The adapter de was not found"
    again = server.request("POST", "/adapters", json.dumps({"name": "fr", "src": "/x"}), JSON)
    assert again.status == 409 and again.json()["message"].startswith("The adapter fr already exists.")

    removed = server.request("DELETE", "/adapters/fr")
    assert removed.status == 200 and removed.body == b"Adapter fr unregistered"
    gone = server.request("DELETE", "/adapters/fr")
    assert gone.status == 404 and gone.json()["message"] == "The adapter fr was not found"
    assert all(_ask(server, {SESSION: s})["adapter_src"] is None for s in sessions)
    for session in sessions:
        server.request("POST", "/invocations", CLOSE, {**JSON, SESSION: session})


def test_an_adapter_that_loads_in_one_worker_only_is_unloaded_again(server: Server, tmp_path: Path) -> None:
    src = str(tmp_path / "weights.once")
    failed = server.request("POST", "/adapters", json.dumps({"name": "half", "src": src}), JSON)
    assert failed.status == 500 and failed.json()["message"] == f"{src} is taken by another worker"
    assert server.request("POST", "/invocations", "{}", {**JSON, ADAPTER: "half"}).status == 404
    sessions = [_new_session(server) for _ in range(2)]  # one per worker: neither holds it now
    answers = [_ask(server, {SESSION: s}) for s in sessions]
    assert len({a["pid"] for a in answers}) == 2
    assert all("half" not in a["loaded"] for a in answers)  # type: ignore[operator]
    for session in sessions:
        server.request("POST", "/invocations", CLOSE, {**JSON, SESSION: session})


def test_an_adapter_that_fails_to_unload_stays_registered(server: Server) -> None:
    assert (
        server.request("POST", "/adapters", json.dumps({"name": "pinned", "src": "/p"}), JSON).status == 200
    )
    refused = server.request("DELETE", "/adapters/pinned")
    assert refused.status == 500 and refused.json()["message"] == "adapter pinned is in use"
    assert _ask(server, {ADAPTER: "pinned"})["adapter"] == "pinned"


@pytest.mark.parametrize(
    ("method", "path", "status", "message"),
    [
        ("GET", "/adapters", 405, "use POST /adapters to register an adapter"),
        ("POST", "/adapters/x", 405, "use DELETE /adapters/x to unregister an adapter"),
        ("DELETE", "/adapters/x/y", 404, "no such path '/adapters/x/y'; use DELETE /adapters/{name}"),
    ],
)
def test_the_adapter_api_refuses_other_routes(
    server: Server, method: str, path: str, status: int, message: str
) -> None:
    answer = server.request(method, path)
    assert answer.status == status and answer.json()["message"] == message


def test_an_adapter_that_fails_to_load_is_not_registered(server: Server) -> None:
    failed = server.request("POST", "/adapters", json.dumps({"name": "x", "src": "/w/broken"}), JSON)
    assert failed.status == 500 and failed.json()["message"] == "no adapter weights at /w/broken"
    assert server.request("POST", "/invocations", "{}", {**JSON, ADAPTER: "x"}).status == 404
    assert server.request("GET", "/ping").status == 200


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"src": "/a"}, "POST /adapters: 'name' is None; the parameter name must be a non-empty string"),
        (
            {"name": "a", "src": ""},
            "POST /adapters: 'src' is ''; the parameter src must be a non-empty string",
        ),
        ({"name": "a", "src": "/a", "pin": "yes"}, "POST /adapters: 'pin' is 'yes'; use true or false"),
    ],
)
def test_a_bad_adapter_registration_is_400(server: Server, body: dict[str, object], message: str) -> None:
    answer = server.request("POST", "/adapters", json.dumps(body), JSON)
    assert answer.status == 400 and answer.json()["message"] == message


def test_a_session_expires_and_its_close_hook_runs(tmp_path: Path) -> None:
    model = write_model(tmp_path, "stateful", HANDLER)
    env = {
        "SAGEMAKER_ENABLE_STATEFUL_SESSIONS": "true",
        "SAGEMAKER_SESSIONS_EXPIRATION": "1",
        "SAGEMAKER_SESSIONS_PATH": str(tmp_path / "state"),
        "SAGEMAKER_MODEL_SERVER_WORKERS": "1",
    }
    server = start_server(tmp_path, ["--model", str(model)], env=env)
    try:
        session = _new_session(server)

        def expired() -> bool:
            answer = server.request("POST", "/invocations", "{}", {**JSON, SESSION: session})
            return answer.status == 400

        wait_until(expired, timeout=20, what=server.log)
        wait_until(lambda: session in _ask(server)["closed"], timeout=20, what=server.log)  # type: ignore[operator]
        assert not (tmp_path / "state" / session).exists()
    finally:
        server.stop()


def test_without_sessions_enabled_the_session_header_is_passed_through(tmp_path: Path) -> None:
    model = write_model(tmp_path, "plain", HANDLER.replace("def session_start_fn", "def _unused"))
    server = start_server(tmp_path, ["--model", str(model)], env={"SAGEMAKER_MODEL_SERVER_WORKERS": "1"})
    try:
        answer = server.request("POST", "/invocations", NEW, JSON)
        assert answer.status == 200 and "x-amzn-sagemaker-new-session-id" not in answer.headers
    finally:
        server.stop()


FRAGILE = """
import json
import os


def model_fn(model_dir):
    return {}


def session_start_fn(model, session_id):
    if len(model) >= 1:
        raise RuntimeError("this worker holds one session at most")
    model[session_id] = 0


def transform_fn(model, data, content_type, accept, context):
    if json.loads(data).get("die"):
        os._exit(3)
    return json.dumps({"pid": os.getpid(), "session": context.session_id}), "application/json"
"""


def test_a_failing_start_hook_is_424_and_a_dead_worker_takes_its_sessions(tmp_path: Path) -> None:
    model = write_model(tmp_path, "fragile", FRAGILE)
    env = {"SAGEMAKER_ENABLE_STATEFUL_SESSIONS": "true", "SAGEMAKER_MODEL_SERVER_WORKERS": "1"}
    server = start_server(tmp_path, ["--model", str(model)], env=env)
    try:
        no_api = server.request("POST", "/adapters", json.dumps({"name": "a", "src": "/a"}), JSON)
        assert no_api.status == 404 and no_api.json()["message"] == (
            "no such path '/adapters': this model serves no adapter API; define "
            "load_adapter_fn(model, name, src) in code/inference.py"
        )
        session = _new_session(server)
        refused = server.request("POST", "/invocations", NEW, JSON)
        assert refused.status == 424
        assert refused.json()["message"] == "Failed to create session: this worker holds one session at most"

        died = server.request("POST", "/invocations", json.dumps({"die": True}), {**JSON, SESSION: session})
        assert died.status == 500 and "exited" in died.json()["message"]
        gone = server.request("POST", "/invocations", "{}", {**JSON, SESSION: session})
        assert gone.status == 400 and gone.json()["message"] == f"Bad request: session not found: {session}"

        def replaced() -> bool:  # 503 "no model worker is ready to hold a session" until it has loaded
            answer = server.request("POST", "/invocations", NEW, JSON)
            assert answer.status in (200, 503), answer.body
            return answer.status == 200

        wait_until(replaced, timeout=30, what=server.log)  # the replacement worker holds new sessions
    finally:
        server.stop()


def test_a_job_for_a_worker_that_is_gone_is_answered_500_at_once() -> None:
    from smkit.serving.front.pinning import Pinning
    from smkit.serving.front.relay import Job
    from smkit.serving.wire.reply import Reply

    answers: list[Reply] = []

    class Recorder:
        def answer(self, token: object, reply: Reply, pid: int) -> None:
            answers.append(reply)

    job = Job(1, b"", -1, None, Recorder(), 0.0, 1.0)  # type: ignore[arg-type]
    assert Pinning().send(0, job) is False
    assert answers[0].status == 500
    assert json.loads(answers[0].body)["message"] == "the worker in slot 0 is not running (it exited); retry"


def test_a_replacement_worker_loads_the_registered_adapters_before_it_serves(tmp_path: Path) -> None:
    model = write_model(tmp_path, "stateful", HANDLER)
    server = start_server(tmp_path, ["--model", str(model)], env={"SAGEMAKER_MODEL_SERVER_WORKERS": "1"})
    try:
        body = json.dumps({"name": "fr", "src": "/adapters/fr"})
        assert server.request("POST", "/adapters", body, JSON).status == 200
        first = _ask(server, {ADAPTER: "fr"})
        died = server.request("POST", "/invocations", json.dumps({"die": True}), JSON)
        assert died.status == 500

        def replaced() -> dict[str, object] | None:
            answer = server.request("POST", "/invocations", "{}", {**JSON, ADAPTER: "fr"})
            assert answer.status in (200, 503), answer.body
            return answer.json() if answer.status == 200 else None

        after = wait_until(replaced, timeout=30, what=server.log)
        assert after["pid"] != first["pid"] and after["adapter_src"] == "/adapters/fr"
    finally:
        server.stop()
