"""The OpenAI-compatible route of the local endpoint, called with the real ``openai`` client: chat
completions streamed and not, for an endpoint and an inference component, with SageMaker bearer tokens
checked (well-formed, not expired, this region and service, a known key); the container is smkit's own
runtime with a handler that answers Chat Completions JSON."""

from __future__ import annotations

import base64
import datetime as dt
import json

import botocore.auth
import httpx
import openai
import pytest
from botocore.credentials import Credentials
from chat_handler import COMPONENTS, REALTIME, project
from sagemaker.core.token_generator import generate_token
from sagemaker.core.token_generator.token_generator import _generate_token

from smkit.cli.local_endpoint import _describe
from smkit.config import load_deployment
from smkit.local import LocalEndpoint
from smkit.local.auth import BAD_SIGNATURE, make_token
from smkit.local.components import create_runtime

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello local endpoint"}]


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    root = tmp_path_factory.mktemp("openai-endpoint")
    config = project(root, "chat-realtime", REALTIME)
    with LocalEndpoint(config, root=root, log_dir=root / "logs", model_envs=False) as ep:
        yield ep


@pytest.fixture(scope="module")
def components(tmp_path_factory):
    root = tmp_path_factory.mktemp("openai-components")
    config = project(root, "chat-components", COMPONENTS)
    with LocalEndpoint(config, root=root, log_dir=root / "logs", model_envs=False) as ep:
        yield ep


def _client(endpoint, component=None, token=None):
    return openai.OpenAI(
        base_url=endpoint.openai_base_url(component), api_key=token or endpoint.token(), max_retries=0
    )


def _streamed(stream) -> str:
    return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)


def test_chat_completion_on_an_endpoint(endpoint):
    answer = _client(endpoint).chat.completions.create(model="", messages=MESSAGES)
    assert answer.choices[0].message.content == "echo: hello local endpoint"
    assert answer.choices[0].finish_reason == "stop"
    assert answer.usage is not None and answer.usage.total_tokens == 5
    # What reached the container: the body unchanged (model field included) with the client's Content-Type.
    assert answer.model == ""
    assert answer.system_fingerprint == "application/json"


def test_streamed_chat_completion_on_an_endpoint(endpoint):
    stream = _client(endpoint).chat.completions.create(model="my-model", messages=MESSAGES, stream=True)
    assert _streamed(stream).strip() == "echo: hello local endpoint"


def test_chat_completion_on_an_inference_component(components):
    client = _client(components, "talker")
    answer = client.chat.completions.create(model="", messages=MESSAGES)
    assert answer.choices[0].message.content == "echo: hello local endpoint"
    assert _streamed(client.chat.completions.create(model="", messages=MESSAGES, stream=True)).strip() == (
        "echo: hello local endpoint"
    )


def test_the_stream_arrives_as_server_sent_events(endpoint):
    body = {"model": "", "messages": MESSAGES, "stream": True}
    url = endpoint.openai_base_url() + "/chat/completions"
    with httpx.stream(
        "POST", url, json=body, headers={"Authorization": f"Bearer {endpoint.token()}"}
    ) as reply:
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("text/event-stream")
        events = [line for line in reply.iter_lines() if line]
    assert events[-1] == "data: [DONE]"
    assert json.loads(events[0].removeprefix("data: "))["object"] == "chat.completion.chunk"


def test_an_unknown_component_is_the_services_error(components):
    with pytest.raises(openai.BadRequestError) as info:
        _client(components, "nobody").chat.completions.create(model="", messages=MESSAGES)
    assert "Inference component nobody of endpoint chat-components not found" in str(info.value)


def test_a_component_path_on_an_endpoint_without_components_is_refused(endpoint):
    with pytest.raises(openai.BadRequestError) as info:
        _client(endpoint, "talker").chat.completions.create(model="", messages=MESSAGES)
    assert "Inference Component Name header is not allowed" in str(info.value)


def test_the_sdks_own_token_is_accepted(endpoint, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "local")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "local")
    token = generate_token(region="us-east-1", expiry=dt.timedelta(minutes=5))
    answer = _client(endpoint, token=token).chat.completions.create(model="", messages=MESSAGES)
    assert answer.choices[0].message.content == "echo: hello local endpoint"


def _refused(endpoint, token: str, code: str, message: str) -> None:
    with pytest.raises(openai.PermissionDeniedError) as info:
        _client(endpoint, token=token).chat.completions.create(model="", messages=MESSAGES)
    response = info.value.response
    assert response.status_code == 403
    assert response.headers["x-amzn-ErrorType"] == code
    assert message in response.json()["message"], response.json()
    # The endpoint keeps serving.
    assert _client(endpoint).chat.completions.create(model="", messages=MESSAGES).choices


def test_a_missing_token_is_refused(endpoint):
    reply = httpx.post(endpoint.openai_base_url() + "/chat/completions", json={"messages": MESSAGES})
    assert reply.status_code == 403
    assert reply.headers["x-amzn-ErrorType"] == "MissingAuthenticationTokenException"
    assert reply.json() == {"message": "Missing Authentication Token"}


def test_a_token_without_the_prefix_is_refused(endpoint):
    _refused(
        endpoint,
        "sk-not-a-sagemaker-token",
        "InvalidSignatureException",
        "Authorization must be 'Bearer sagemaker-api-key-<token>'",
    )


def test_a_token_that_is_not_base64_is_refused(endpoint):
    _refused(
        endpoint,
        "sagemaker-api-key-%%%not-base64",
        "InvalidSignatureException",
        "followed by base64 of a presigned URL",
    )


def test_a_token_for_another_action_is_refused(endpoint):
    url = "sagemaker.amazonaws.com/?Action=InvokeEndpoint&X-Amz-Date=20260101T000000Z"
    token = "sagemaker-api-key-" + base64.b64encode(url.encode()).decode()
    _refused(endpoint, token, "InvalidSignatureException", "is not a presigned CallWithBearerToken URL")


def test_an_expired_token_is_refused(endpoint, monkeypatch):
    # Made 2 hours ago with a 1-hour lifetime, on a clock that was right then.
    then = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(hours=2)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: then)
    token = make_token("local", "local", "us-east-1", expires_s=3600)
    monkeypatch.undo()
    _refused(endpoint, token, "InvalidSignatureException", "The bearer token expired at ")


def test_a_token_for_another_region_is_refused(endpoint):
    token = _generate_token(Credentials("local", "local"), "eu-west-1", 600)
    _refused(
        endpoint,
        token,
        "InvalidSignatureException",
        "Credential should be scoped to a valid region, not 'eu-west-1'.",
    )


def test_a_token_signed_with_a_wrong_secret_is_refused(endpoint):
    _refused(endpoint, make_token("local", "wrong", "us-east-1"), "InvalidSignatureException", BAD_SIGNATURE)


def test_a_token_of_an_unknown_key_is_refused(endpoint):
    _refused(
        endpoint,
        make_token("AKIDNOBODY", "x", "us-east-1"),
        "UnrecognizedClientException",
        "The security token included in the request is invalid.",
    )


def test_a_token_longer_than_twelve_hours_is_refused(endpoint):
    url = base64.b64decode(make_token("local", "local", "us-east-1")[len("sagemaker-api-key-") :]).decode()
    forged = (
        "sagemaker-api-key-"
        + base64.b64encode(url.replace("X-Amz-Expires=43200", "X-Amz-Expires=86400").encode()).decode()
    )
    _refused(
        endpoint, forged, "InvalidSignatureException", "X-Amz-Expires must be between 1 and 43200 seconds"
    )


def test_token_lifetime_is_bounded_when_made():
    with pytest.raises(ValueError, match="a bearer token lives 1 s to 43200 s"):
        make_token("local", "local", "us-east-1", expires_s=43201)


def test_sigv4_is_not_checked_unless_asked(endpoint):
    # Without --verify-signatures, a wrong secret works locally (and would fail on AWS).
    import boto3

    runtime = boto3.client(
        "sagemaker-runtime",
        endpoint_url=endpoint.url,
        region_name="us-west-2",
        aws_access_key_id="x",
        aws_secret_access_key="y",
    )
    body = json.dumps({"messages": MESSAGES})
    reply = runtime.invoke_endpoint(EndpointName=endpoint.name, ContentType="application/json", Body=body)
    assert (
        json.loads(reply["Body"].read())["choices"][0]["message"]["content"] == "echo: hello local endpoint"
    )


@pytest.mark.parametrize("component", [None, "talker"])
def test_other_openai_paths_answer_in_the_runtimes_error_shape_naming_the_route(
    endpoint, components, component
):
    """/v1/models, /v1/completions, ...: SageMaker serves chat completions only; the error says so."""
    ep = components if component else endpoint
    client = _client(ep, component)
    with pytest.raises(openai.NotFoundError) as info:
        client.models.list()
    response = info.value.response
    assert response.headers["x-amzn-ErrorType"] == "UnknownOperationException"
    route = ep.openai_base_url(component).removeprefix(ep.url) + "/chat/completions"
    assert f"OpenAI-compatible route is POST {route} only" in response.json()["message"]
    with pytest.raises(openai.NotFoundError):
        client.completions.create(model="", prompt="hello")
    assert client.chat.completions.create(model="", messages=MESSAGES).choices  # still serving


def test_the_banner_prints_the_endpoints_openai_base_url(endpoint):
    assert f'OpenAI(base_url="{endpoint.openai_base_url()}"' in _describe(endpoint)


@pytest.mark.parametrize(
    ("config", "targets"),
    [
        ("realtime", [None]),
        ("realtime-shadow", [None]),
        ("serverless", [None]),
        ("multi-container", [None]),
        ("multi-container-direct", []),
        ("multi-model", []),
        ("async", []),
        ("inference-components", ["tabular", "iris"]),
    ],
)
def test_the_route_is_served_where_a_call_with_no_header_is_taken(repo, config, targets):
    # What the banner prints; the tests of each endpoint kind call the route where it is not served.
    runtime = create_runtime(load_deployment(repo / "config" / f"{config}.yaml"))
    assert runtime.openai_targets() == targets


def test_the_banner_prints_each_components_openai_base_url(components):
    banner = _describe(components)
    assert f'OpenAI(base_url="{components.openai_base_url("talker")}"' in banner
    assert f'OpenAI(base_url="{components.openai_base_url()}"' not in banner
