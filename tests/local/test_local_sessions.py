"""Sticky sessions through the local endpoint with boto3's unmodified client: two instances of a stateful
model, a session's requests stick to the instance that created it, CLOSE, unknown and malformed ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from smkit.local import LocalEndpoint

HANDLER = """
import json
import os


def model_fn(model_dir):
    return {"turns": {}}


def session_start_fn(model, session_id):
    model["turns"][session_id] = 0


def session_close_fn(model, session_id):
    model["turns"].pop(session_id)


def transform_fn(model, data, content_type, accept, context):
    if json.loads(data).get("bad_header"):
        context.set_response_header(0, "X-Amzn-SageMaker-New-Session-Id", "no expiry;; here")
        return "{}", "application/json"
    session = context.session_id
    if session is not None:
        model["turns"][session] += 1
    answer = {"pid": os.getpid(), "session": session, "turn": model["turns"].get(session)}
    return json.dumps(answer), "application/json"
"""
NEW = json.dumps({"requestType": "NEW_SESSION"})
CLOSE = json.dumps({"requestType": "CLOSE"})


def _config(folder: Path, repo: Path) -> Path:
    (folder / "model" / "code").mkdir(parents=True)
    (folder / "model" / "code" / "inference.py").write_text(HANDLER)
    data = {
        "name": "sticky-demo",
        "environment": "dev",
        "image": {"source": "build", "context": str(repo), "dockerfile": "container/Dockerfile"},
        "model": {
            "containers": [
                {
                    "name": "chat",
                    "model_data": {"source": "prefix", "path": "model"},
                    "environment": {"SAGEMAKER_ENABLE_STATEFUL_SESSIONS": "true"},
                }
            ]
        },
        "endpoint": {
            "type": "realtime",
            "variants": [{"name": "main", "instance_type": "ml.m5.large", "initial_instance_count": 2}],
        },
    }
    path = folder / "sticky.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def endpoint(repo, tmp_path_factory):
    folder = tmp_path_factory.mktemp("sticky")
    with LocalEndpoint(_config(folder, repo), root=folder, log_dir=folder, workers=1) as ep:
        yield ep


@pytest.fixture(scope="module")
def runtime(endpoint):
    return endpoint.client()


def _invoke(endpoint, runtime, body: str = "{}", **extra):
    return runtime.invoke_endpoint(
        EndpointName=endpoint.name, ContentType="application/json", Body=body, **extra
    )


def _open(endpoint, runtime) -> str:
    created = _invoke(endpoint, runtime, NEW, SessionId="NEW_SESSION")
    session_id, expires = created["NewSessionId"].split("; Expires=")
    assert created["Body"].read() == f"Session {session_id} created".encode()
    assert expires.endswith("Z") and len(expires) == len("2026-01-01T00:00:00Z")
    return session_id


def test_a_session_sticks_to_the_instance_that_created_it(endpoint, runtime):
    sessions = [_open(endpoint, runtime) for _ in range(2)]
    seen = {}
    for session_id in sessions:
        answers = [
            json.loads(_invoke(endpoint, runtime, SessionId=session_id)["Body"].read()) for _ in range(4)
        ]
        assert [a["turn"] for a in answers] == [1, 2, 3, 4]  # its state, on one instance
        assert {a["pid"] for a in answers} == {answers[0]["pid"]}
        seen[session_id] = answers[0]["pid"]
    assert len(set(seen.values())) == 2  # two instances, one session each

    for session_id in sessions:
        closed = _invoke(endpoint, runtime, CLOSE, SessionId=session_id)
        assert closed["ClosedSessionId"] == session_id
        assert closed["Body"].read() == f"Session {session_id} closed".encode()


def test_an_unknown_session_is_the_containers_400_as_a_model_error(endpoint, runtime, client_error):
    error = client_error(
        lambda: _invoke(endpoint, runtime, SessionId="not-a-session"),
        "ModelError",
        "Bad request: session not found: not-a-session",
    )
    assert error.response["OriginalStatusCode"] == 400
    assert error.response["ResponseMetadata"]["HTTPStatusCode"] == 424
    # The endpoint keeps serving, with and without sessions.
    assert json.loads(_invoke(endpoint, runtime)["Body"].read())["session"] is None
    session_id = _open(endpoint, runtime)
    assert json.loads(_invoke(endpoint, runtime, SessionId=session_id)["Body"].read())["turn"] == 1
    _invoke(endpoint, runtime, CLOSE, SessionId=session_id)
    client_error(
        lambda: _invoke(endpoint, runtime, SessionId=session_id),
        "ModelError",
        f"Bad request: session not found: {session_id}",
    )


def test_a_session_id_the_api_refuses_is_a_validation_error(endpoint, runtime, client_error):
    client_error(
        lambda: _invoke(endpoint, runtime, SessionId="bad_id!"),
        "ValidationError",
        "Value 'bad_id!' at 'sessionId' failed to satisfy constraint: Member must satisfy regular expression "
        "pattern: ^(NEW_SESSION)$|^[a-zA-Z0-9](-*[a-zA-Z0-9])*$",
    )
    client_error(
        lambda: runtime.invoke_endpoint_with_response_stream(
            EndpointName=endpoint.name, ContentType="application/json", Body=NEW, SessionId="NEW_SESSION"
        ),
        "ValidationError",
        "a session is created with invoke_endpoint, not with a response stream",
    )


def test_a_live_session_sticks_on_a_response_stream_too(endpoint, runtime):
    session_id = _open(endpoint, runtime)
    first = json.loads(_invoke(endpoint, runtime, SessionId=session_id)["Body"].read())
    streamed = runtime.invoke_endpoint_with_response_stream(
        EndpointName=endpoint.name, ContentType="application/json", Body="{}", SessionId=session_id
    )
    body = b"".join(event["PayloadPart"]["Bytes"] for event in streamed["Body"] if "PayloadPart" in event)
    answer = json.loads(body)
    assert answer["pid"] == first["pid"] and answer["turn"] == 2
    _invoke(endpoint, runtime, CLOSE, SessionId=session_id)


def test_a_malformed_new_session_header_from_the_model_is_a_model_error(endpoint, runtime, client_error):
    client_error(
        lambda: _invoke(endpoint, runtime, json.dumps({"bad_header": True})),
        "ModelError",
        "which is not '<id>; Expires=<UTC time>'",
    )
    assert json.loads(_invoke(endpoint, runtime)["Body"].read())["session"] is None
