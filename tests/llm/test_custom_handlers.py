"""A ``model.py`` of custom handlers for AWS's vLLM image, run by the real engine on the local endpoint.

The model folder holds the tiny model and a ``model.py`` (the image's ``CUSTOM_SCRIPT_FILENAME`` default)
that overrides ``/ping`` with model-hosting-container-standards' ``custom_ping_handler`` decorator, caps
``max_tokens`` in pre-processing (``input_formatter``) and adds a field to every whole JSON answer in
post-processing (``output_formatter``). vLLM's server loads it from ``SAGEMAKER_MODEL_PATH`` as the image
does; boto3, a response stream and the OpenAI client see each effect.
"""

from __future__ import annotations

import json
import shutil
import urllib.request
from collections.abc import Iterator

import openai
import pytest
from llm_support import llm_config, llm_endpoint

from smkit.local import LocalEndpoint

BASE = "qwen"
CAP = 4
HANDLERS = f'''"""Custom handlers: a /ping of our own, max_tokens capped at {CAP}, a field in every JSON answer."""

import json

import model_hosting_container_standards.sagemaker as sagemaker_standards
from fastapi import Request, Response
from model_hosting_container_standards.common.fastapi.middleware import input_formatter, output_formatter


@sagemaker_standards.custom_ping_handler
async def ping(request: Request) -> Response:
    return Response(content=json.dumps({{"status": "ready", "by": "model.py"}}), media_type="application/json")


@input_formatter
async def cap_tokens(request: Request) -> Request:
    if request.url.path == "/invocations":
        body = await request.json()
        body["max_tokens"] = min(body.get("max_tokens", {CAP}), {CAP})
        request._body = json.dumps(body).encode()
    return request


@output_formatter
async def add_field(response: Response) -> Response:
    # The middleware hands over Starlette's streamed response: read its body, answer a new one.
    if response.status_code != 200 or "json" not in response.headers.get("content-type", ""):
        return response
    body = json.loads(b"".join([chunk async for chunk in response.body_iterator]))
    if isinstance(body, dict) and "choices" in body:
        body["handled_by"] = "model.py"
    headers = {{k: v for k, v in response.headers.items() if k.lower() != "content-length"}}
    return Response(content=json.dumps(body), status_code=200, headers=headers, media_type="application/json")
'''


@pytest.fixture(scope="module")
def endpoint(moto_env, tiny, tmp_path_factory) -> Iterator[LocalEndpoint]:
    folder = tmp_path_factory.mktemp("handled") / "model"
    shutil.copytree(tiny["model"], folder)
    (folder / "model.py").write_text(HANDLERS)
    logs = tmp_path_factory.mktemp("handler-logs")
    config = llm_config(moto_env, {**tiny, "model": folder})
    with llm_endpoint(config, logs, moto=moto_env) as ep:
        yield ep


def test_the_handlers_ping_answers_the_engines_ping(endpoint: LocalEndpoint) -> None:
    process = endpoint.runtime.components[BASE].process  # type: ignore[attr-defined]
    with urllib.request.urlopen(f"http://127.0.0.1:{process.port}/ping", timeout=30) as answer:
        assert json.loads(answer.read()) == {"status": "ready", "by": "model.py"}


def test_boto3_sees_pre_and_post_processing(endpoint: LocalEndpoint) -> None:
    answer = endpoint.client().invoke_endpoint(
        EndpointName=endpoint.name,
        InferenceComponentName=BASE,
        ContentType="application/json",
        Body=json.dumps({"prompt": "Hello", "max_tokens": 32, "ignore_eos": True, "temperature": 0}),
    )
    body = json.loads(answer["Body"].read())
    assert body["handled_by"] == "model.py"
    assert body["usage"]["completion_tokens"] == CAP  # asked for 32: the pre-processing capped it


def test_a_response_stream_sees_the_pre_processing(endpoint: LocalEndpoint) -> None:
    stream = endpoint.client().invoke_endpoint_with_response_stream(
        EndpointName=endpoint.name,
        InferenceComponentName=BASE,
        ContentType="application/json",
        Body=json.dumps(
            {
                "prompt": "Hello",
                "max_tokens": 32,
                "ignore_eos": True,
                "temperature": 0,
                "stream": True,
                "stream_options": {"include_usage": True},
            }
        ),
    )
    text = b"".join(event["PayloadPart"]["Bytes"] for event in stream["Body"] if "PayloadPart" in event)
    events = [json.loads(line[6:]) for line in text.decode().splitlines() if line.startswith("data: {")]
    usage = [e["usage"] for e in events if e.get("usage")]
    assert usage and usage[-1]["completion_tokens"] == CAP


def test_the_openai_client_sees_the_handlers_field(endpoint: LocalEndpoint) -> None:
    client = openai.OpenAI(base_url=endpoint.openai_base_url(BASE), api_key=endpoint.token(), max_retries=0)
    answer = client.chat.completions.create(
        model="",
        messages=[{"role": "user", "content": "Hello"}],
        max_tokens=32,
        temperature=0,
        extra_body={"ignore_eos": True},
    )
    assert answer.model_extra is not None and answer.model_extra["handled_by"] == "model.py"
    assert answer.usage is not None and answer.usage.completion_tokens == CAP


# The variables pick env_ping and env_invoke over the decorated ping; env_ping answers with a package of
# the folder's requirements.txt, which the local endpoint layers over the engine environment.
SELECTED = """import json

import emoji
import model_hosting_container_standards.sagemaker as sagemaker_standards
from fastapi import Request, Response


@sagemaker_standards.custom_ping_handler
async def decorated_ping(request: Request) -> Response:
    return Response(content=json.dumps({"by": "decorator"}), media_type="application/json")


async def env_ping(request: Request) -> Response:
    body = {"by": "CUSTOM_FASTAPI_PING_HANDLER", "emoji": emoji.emojize(":thumbs_up:")}
    return Response(content=json.dumps(body), media_type="application/json")


async def env_invoke(request: Request) -> Response:
    body = {"by": "CUSTOM_FASTAPI_INVOCATION_HANDLER", "echo": await request.json()}
    return Response(content=json.dumps(body), media_type="application/json")
"""


def test_the_custom_fastapi_variables_select_the_handlers_served_locally(moto_env, tiny, tmp_path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(tiny["model"], folder)
    (folder / "model.py").write_text(SELECTED)
    (folder / "requirements.txt").write_text("# what model.py needs\nemoji==2.14.1\n")
    config = llm_config(
        moto_env,
        {**tiny, "model": folder},
        CUSTOM_FASTAPI_PING_HANDLER="model.py:env_ping",
        CUSTOM_FASTAPI_INVOCATION_HANDLER="model.py:env_invoke",
    )
    with llm_endpoint(config, tmp_path, log_dir=tmp_path / "logs", moto=moto_env) as endpoint:
        process = endpoint.runtime.components[BASE].process  # type: ignore[attr-defined]
        with urllib.request.urlopen(f"http://127.0.0.1:{process.port}/ping", timeout=30) as answer:
            assert json.loads(answer.read()) == {"by": "CUSTOM_FASTAPI_PING_HANDLER", "emoji": "\U0001f44d"}
        answer = endpoint.client().invoke_endpoint(
            EndpointName=endpoint.name,
            InferenceComponentName=BASE,
            ContentType="application/json",
            Body=json.dumps({"prompt": "Hello", "max_tokens": 4}),
        )
        assert json.loads(answer["Body"].read()) == {
            "by": "CUSTOM_FASTAPI_INVOCATION_HANDLER",
            "echo": {"prompt": "Hello", "max_tokens": 4},
        }
