"""config/llm.yaml on the local endpoint with the real engine: AWS's vLLM image runs as vLLM's own server
(vLLM's CPU build) on a tiny model from the S3 stand-in, its LoRA adapter component loaded into that engine.

Every call goes through boto3's unmodified ``sagemaker-runtime`` client or the real ``openai`` client on the
OpenAI-compatible route. Decoding is greedy (``temperature: 0``), so the same prompt gives the same tokens.
One engine serves the whole module; its container runs with ``SAGEMAKER_ENABLE_STATEFUL_SESSIONS=true``,
so the engine's own server (vLLM with AWS's model-hosting-container-standards) answers sticky sessions.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

import botocore.auth
import httpx
import openai
import pytest
from botocore.exceptions import ClientError
from llm_support import CONTEXT, llm_config, llm_endpoint

from smkit.local import LocalEndpoint
from smkit.local.auth import BAD_SIGNATURE, LOCAL_KEY, make_token

BASE, ADAPTER = "qwen", "qwen-support"
PROMPT = "Hello, how are"


@pytest.fixture(scope="module")
def endpoint(moto_env, tiny, tmp_path_factory) -> Iterator[LocalEndpoint]:
    logs = tmp_path_factory.mktemp("llm-logs")
    # Sessions on disk in a folder of the test's own (the package's default is /dev/shm/sagemaker_sessions).
    sessions = {
        "SAGEMAKER_ENABLE_STATEFUL_SESSIONS": "true",
        "SAGEMAKER_SESSIONS_PATH": str(logs / "sessions"),
    }
    config = llm_config(moto_env, tiny, **sessions)
    with llm_endpoint(config, logs, moto=moto_env) as ep:
        yield ep


@pytest.fixture(scope="module")
def runtime(endpoint):
    return endpoint.client()


def _invoke(runtime: Any, endpoint: LocalEndpoint, component: str, body: dict[str, Any]) -> dict[str, Any]:
    response = runtime.invoke_endpoint(
        EndpointName=endpoint.name,
        InferenceComponentName=component,
        ContentType="application/json",
        Body=json.dumps(body),
    )
    assert response["ContentType"].startswith("application/json")
    return json.loads(response["Body"].read())


def _completion(runtime: Any, endpoint: LocalEndpoint, component: str, **extra: Any) -> dict[str, Any]:
    body = {"prompt": PROMPT, "max_tokens": 8, "min_tokens": 8, "temperature": 0, "return_token_ids": True}
    return _invoke(runtime, endpoint, component, {**body, **extra})


def _model_error(call: Any) -> dict[str, Any]:
    with pytest.raises(ClientError) as info:
        call()
    response = info.value.response
    assert response["Error"]["Code"] == "ModelError", response
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 424
    return response


def test_a_completion_through_invoke_endpoint(endpoint, runtime):
    answer = _completion(runtime, endpoint, BASE)
    assert answer["object"] == "text_completion"
    assert answer["model"] == "/opt/ml/model"  # the name AWS's image serves its model folder under
    assert answer["usage"]["completion_tokens"] == 8
    assert len(answer["choices"][0]["token_ids"]) == 8
    assert answer["system_fingerprint"].startswith("vllm-")
    assert (
        _completion(runtime, endpoint, BASE)["choices"][0]["token_ids"] == answer["choices"][0]["token_ids"]
    )


def test_a_chat_completion_through_invoke_endpoint(endpoint, runtime):
    answer = _invoke(
        runtime,
        endpoint,
        BASE,
        {
            "messages": [{"role": "user", "content": "What is deep learning?"}],
            "max_tokens": 6,
            "temperature": 0,
        },
    )
    assert answer["object"] == "chat.completion"
    assert answer["choices"][0]["message"]["role"] == "assistant"
    assert answer["usage"]["completion_tokens"] <= 6


def test_a_stream_through_invoke_endpoint_with_response_stream(endpoint, runtime):
    whole = _completion(runtime, endpoint, BASE)["choices"][0]["text"]
    response = runtime.invoke_endpoint_with_response_stream(
        EndpointName=endpoint.name,
        InferenceComponentName=BASE,
        ContentType="application/json",
        Body=json.dumps(
            {"prompt": PROMPT, "max_tokens": 8, "min_tokens": 8, "temperature": 0, "stream": True}
        ),
    )
    assert response["ContentType"].startswith("text/event-stream")
    parts = [event["PayloadPart"]["Bytes"] for event in response["Body"]]
    assert len(parts) > 1  # the engine's server-sent events arrive as they are generated
    events = [line.removeprefix(b"data: ") for line in b"".join(parts).split(b"\n\n") if line.strip()]
    assert events[-1] == b"[DONE]"
    text = "".join(json.loads(event)["choices"][0]["text"] for event in events[:-1])
    assert text == whole


def test_the_adapter_component_answers_with_the_adapter_applied(endpoint, runtime):
    base = _completion(runtime, endpoint, BASE)
    adapted = _completion(runtime, endpoint, ADAPTER)
    assert (
        adapted["model"] == ADAPTER
    )  # the engine ran the request with the adapter registered under this name
    assert adapted["choices"][0]["token_ids"] != base["choices"][0]["token_ids"]
    assert (
        _completion(runtime, endpoint, ADAPTER)["choices"][0]["token_ids"]
        == adapted["choices"][0]["token_ids"]
    )
    assert endpoint.runtime.components[ADAPTER].invocations >= 2


def test_an_adapter_the_engine_does_not_have_is_a_model_error_and_it_keeps_serving(endpoint, runtime):
    """The adapter component's weights unloaded from the engine (``DELETE /adapters/{name}``): the engine's
    404 reaches the caller as the service's ModelError; loaded again, the component answers."""
    adapter = endpoint.runtime.components[ADAPTER]
    engine = f"http://127.0.0.1:{adapter.process.port}"
    assert httpx.delete(f"{engine}/adapters/{ADAPTER}", timeout=60).status_code == 200
    response = _model_error(lambda: _completion(runtime, endpoint, ADAPTER))
    assert response["OriginalStatusCode"] == 404
    assert f"The model `{ADAPTER}` does not exist" in response["OriginalMessage"]
    assert _completion(runtime, endpoint, BASE)["usage"]["completion_tokens"] == 8
    source = {"name": ADAPTER, "src": str(adapter.weights)}
    assert httpx.post(f"{engine}/adapters", json=source, timeout=60).status_code == 200
    assert _completion(runtime, endpoint, ADAPTER)["model"] == ADAPTER


def test_an_unknown_component_is_the_services_validation_error(endpoint, runtime):
    with pytest.raises(ClientError) as info:
        _completion(runtime, endpoint, "qwen-sales")
    error = info.value.response["Error"]
    assert error["Code"] == "ValidationError"
    assert error["Message"] == (
        "Inference component qwen-sales of endpoint llm not found; InferenceComponentName must be one of: "
        f"{BASE}, {ADAPTER}."
    )


def test_a_prompt_longer_than_the_context_is_a_model_error_and_it_keeps_serving(endpoint, runtime):
    long_prompt = "Hello how are you " * CONTEXT
    response = _model_error(lambda: _completion(runtime, endpoint, BASE, prompt=long_prompt))
    assert response["OriginalStatusCode"] == 400
    assert f"maximum context length is {CONTEXT} tokens" in response["OriginalMessage"]
    assert json.loads(response["OriginalMessage"])["error"]["type"] == "BadRequestError"
    assert _completion(runtime, endpoint, BASE)["usage"]["completion_tokens"] == 8


# The OpenAI-compatible route with the real ``openai`` client.

CHAT = [{"role": "user", "content": "Hello, how are"}]


def _openai(endpoint: LocalEndpoint, component: str, token: str | None = None) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=endpoint.openai_base_url(component), api_key=token or endpoint.token(), max_retries=0
    )


def _chat(endpoint: LocalEndpoint, component: str) -> str:
    answer = _openai(endpoint, component).chat.completions.create(
        model="", messages=CHAT, max_tokens=8, temperature=0, extra_body={"min_tokens": 8}
    )
    assert answer.object == "chat.completion"
    assert answer.usage is not None and answer.usage.completion_tokens == 8
    content = answer.choices[0].message.content
    assert content is not None
    return content


def _chat_stream(endpoint: LocalEndpoint, component: str) -> str:
    stream = _openai(endpoint, component).chat.completions.create(
        model="", messages=CHAT, max_tokens=8, temperature=0, extra_body={"min_tokens": 8}, stream=True
    )
    chunks = list(stream)
    assert len(chunks) > 2  # the engine's events arrive one by one
    return "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)


def test_the_openai_client_on_the_base_component(endpoint):
    whole = _chat(endpoint, BASE)
    assert whole == _chat(endpoint, BASE)
    assert _chat_stream(endpoint, BASE) == whole


def test_the_openai_client_on_the_adapter_component_answers_with_the_adapter(endpoint):
    base = _chat(endpoint, BASE)
    adapted = _chat(endpoint, ADAPTER)
    assert adapted != base
    assert _chat_stream(endpoint, ADAPTER) == adapted
    answer = _openai(endpoint, ADAPTER).chat.completions.create(model="", messages=CHAT, max_tokens=2)
    assert answer.model == ADAPTER  # the engine ran it with the adapter the component's header selected


def _refused(endpoint: LocalEndpoint, token: str, code: str, message: str) -> None:
    with pytest.raises(openai.PermissionDeniedError) as info:
        _openai(endpoint, BASE, token).chat.completions.create(model="", messages=CHAT, max_tokens=2)
    response = info.value.response
    assert response.status_code == 403
    assert response.headers["x-amzn-ErrorType"] == code
    assert message in response.json()["message"], response.json()
    assert _chat(endpoint, BASE)  # the engine endpoint keeps serving


def test_an_expired_bearer_token_is_403_and_the_engine_keeps_serving(endpoint, monkeypatch):
    then = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(hours=2)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: then)
    token = endpoint.token(expires_s=3600)  # signed 2 hours ago, valid 1 hour
    monkeypatch.undo()
    _refused(endpoint, token, "InvalidSignatureException", "The bearer token expired at ")


def test_a_malformed_bearer_token_is_403_and_the_engine_keeps_serving(endpoint):
    _refused(
        endpoint,
        "sagemaker-api-key-not base64!",
        "InvalidSignatureException",
        "The bearer token is not sagemaker-api-key- followed by base64 of a presigned URL.",
    )
    _refused(
        endpoint,
        make_token(LOCAL_KEY[0], "not-the-secret", "us-east-1", expires_s=60),
        "InvalidSignatureException",
        BAD_SIGNATURE,
    )


# Sticky sessions: the engine's own server (model-hosting-container-standards' session manager) creates and
# closes them; the local endpoint routes by the id as SageMaker does (smkit/local/sticky_sessions.py).


def _session_call(runtime: Any, endpoint: LocalEndpoint, body: dict[str, Any], session: str) -> Any:
    return runtime.invoke_endpoint(
        EndpointName=endpoint.name,
        InferenceComponentName=BASE,
        ContentType="application/json",
        Body=json.dumps(body),
        SessionId=session,
    )


def test_a_sticky_session_new_follow_up_close(endpoint, runtime):
    created = _session_call(runtime, endpoint, {"requestType": "NEW_SESSION"}, "NEW_SESSION")
    session_id, expires = created["NewSessionId"].split("; Expires=")
    assert created["Body"].read() == f"Session {session_id} created".encode()
    assert expires.endswith("Z") and len(expires) == len("2026-01-01T00:00:00Z")
    body = {"prompt": PROMPT, "max_tokens": 8, "min_tokens": 8, "temperature": 0, "return_token_ids": True}
    follow_up = json.loads(_session_call(runtime, endpoint, body, session_id)["Body"].read())
    plain = _completion(runtime, endpoint, BASE)
    assert follow_up["choices"][0]["token_ids"] == plain["choices"][0]["token_ids"]
    closed = _session_call(runtime, endpoint, {"requestType": "CLOSE"}, session_id)
    assert closed["ClosedSessionId"] == session_id
    assert closed["Body"].read() == f"Session {session_id} closed".encode()
    # Closed: the engine no longer knows the id.
    response = _model_error(lambda: _session_call(runtime, endpoint, body, session_id))
    assert response["OriginalStatusCode"] == 400
    assert f"session not found: {session_id}" in response["OriginalMessage"]


def test_an_unknown_session_is_the_engines_400_as_a_model_error_and_it_keeps_serving(endpoint, runtime):
    body = {"prompt": PROMPT, "max_tokens": 8}
    response = _model_error(lambda: _session_call(runtime, endpoint, body, "not-a-session"))
    assert response["OriginalStatusCode"] == 400
    assert "session not found: not-a-session" in response["OriginalMessage"]
    assert _completion(runtime, endpoint, BASE)["usage"]["completion_tokens"] == 8
