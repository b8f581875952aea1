"""config/llm.yaml on the local endpoint with the real engine: AWS's vLLM image runs as vLLM's own server
(vLLM's CPU build) on a tiny model from the S3 stand-in, its LoRA adapter component loaded into that engine.

Every call goes through boto3's unmodified ``sagemaker-runtime`` client. Decoding is greedy
(``temperature: 0``), so the same prompt gives the same tokens. One engine serves the whole module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from botocore.exceptions import ClientError
from llm_support import CONTEXT, STARTUP_S, llm_config

from smkit.local import LocalEndpoint

BASE, ADAPTER = "qwen", "qwen-support"
PROMPT = "Hello, how are"


@pytest.fixture(scope="module")
def endpoint(moto_env, tiny, tmp_path_factory) -> Iterator[LocalEndpoint]:
    config = llm_config(moto_env, tiny)
    logs = tmp_path_factory.mktemp("llm-logs")
    with LocalEndpoint(
        config,
        root=logs,
        log_dir=logs,
        s3_endpoint_url=moto_env.endpoint_url,
        startup_timeout_s=STARTUP_S,
        component_idle_seconds=24 * 3600.0,  # the base scales to zero when idle: not during this module
    ) as ep:
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
