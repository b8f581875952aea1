"""InvokeEndpointWithResponseStream locally: unmodified boto3 (and sagemaker-core) iterate PayloadPart events
as the container produces them; errors arrive as the service's error responses and stream events."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import boto3
import httpx
import pytest
import streaming_models
from botocore.eventstream import EventStreamBuffer
from botocore.exceptions import EventStreamError
from click.testing import CliRunner
from waiting import wait_until

from smkit.cli import main
from smkit.local import LocalEndpoint

CONFIG = """
name: {name}
image: {{source: build, context: ., dockerfile: Dockerfile}}
model:
  network_isolation: false
  containers:
    - name: generator
      model_data: {{source: prefix, path: streaming}}
      environment: {{SAGEMAKER_MODEL_SERVER_TIMEOUT_SECONDS: "{timeout}"}}
endpoint:
{endpoint}
"""
REALTIME = """
  type: realtime
  variants:
    - {name: blue, instance_type: ml.m5.large, initial_instance_count: 1, initial_weight: 1}
    - {name: green, instance_type: ml.m5.large, initial_instance_count: 1, initial_weight: 1}
"""
SERVERLESS = """
  type: serverless
  serverless: {variant_name: main, memory_size_mb: 2048, max_concurrency: 1}
"""
COMPONENTS = """
  type: inference-components
  variants:
    - {name: main, instance_type: ml.m5.xlarge, initial_instance_count: 1}
  inference_components:
    instance_scaling: {min_instances: 1, max_instances: 1}
    components:
      - {name: writer, container: generator, compute: {cpu_cores: 1, min_memory_mb: 512}, copies: 1}
"""


def _project(root: Path, name: str, endpoint: str, timeout: int) -> Path:
    streaming_models.write_model(root, "streaming", streaming_models.STREAMING)
    (root / "Dockerfile").write_text("FROM python:3.11-slim\n")
    config = root / "endpoint.yaml"
    config.write_text(CONFIG.format(name=name, endpoint=endpoint, timeout=timeout))
    return config


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    root = tmp_path_factory.mktemp("streaming-project")
    config = _project(root, "streaming-realtime", REALTIME, 60)
    with LocalEndpoint(config, root=root, log_dir=root / "logs", model_envs=False) as ep:
        yield ep


@pytest.fixture(scope="module")
def runtime(endpoint):
    return endpoint.client()


def _stream(runtime, endpoint, request: dict[str, object], **kwargs):
    return runtime.invoke_endpoint_with_response_stream(
        EndpointName=endpoint.name, ContentType="application/json", Body=json.dumps(request), **kwargs
    )


def test_parts_arrive_as_the_handler_yields_them(endpoint, runtime, tmp_path):
    gate = tmp_path / "gate"
    response = _stream(runtime, endpoint, {"chunks": 5, "delay": 0.4, "gate": str(gate)})
    assert response["ContentType"] == "text/plain"
    assert response["InvokedProductionVariant"] in ("blue", "green")
    parts = []
    for event in response["Body"]:
        parts.append(event["PayloadPart"]["Bytes"])
        gate.touch()  # parts 1-4 wait for this file: part 0 reached boto3 while the handler still ran
    assert parts == [f"chunk {i}\n".encode() for i in range(5)]


def test_error_after_two_parts_is_a_model_stream_error(endpoint, runtime):
    response = _stream(runtime, endpoint, {"chunks": 5, "fail_at": 2})
    parts = []
    with pytest.raises(EventStreamError) as info:
        for event in response["Body"]:
            parts.append(event["PayloadPart"]["Bytes"])
    assert parts == [b"chunk 0\n", b"chunk 1\n"]
    assert info.value.response["Error"]["Code"] == "ModelStreamError"
    assert "closed the connection before the end" in info.value.response["Error"]["Message"]


def test_wire_format_decoded_by_botocore(endpoint):
    """The raw body, parsed by botocore's own event-stream parser: prelude, headers, CRCs, error code."""
    url = f"{endpoint.url}/endpoints/{endpoint.name}/invocations-response-stream"
    response = httpx.post(
        url, content=json.dumps({"chunks": 3, "fail_at": 2}), headers={"Content-Type": "application/json"}
    )
    assert response.headers["content-type"] == "application/vnd.amazon.eventstream"
    buffer = EventStreamBuffer()
    buffer.add_data(response.content)
    messages = list(buffer)
    assert [m.headers[":event-type"] for m in messages[:2]] == ["PayloadPart", "PayloadPart"]
    assert [m.payload for m in messages[:2]] == [b"chunk 0\n", b"chunk 1\n"]
    error = messages[2]
    assert error.headers[":message-type"] == "exception"
    assert error.headers[":exception-type"] == "ModelStreamError"
    assert json.loads(error.payload)["ErrorCode"] == "StreamBroken"


def test_bidirectional_api_answers_why_it_is_not_emulated(endpoint):
    url = f"{endpoint.url}/endpoints/{endpoint.name}/invocations-bidirectional-stream"
    response = httpx.post(url, headers={"Content-Type": "application/vnd.amazon.eventstream"})
    assert response.status_code == 400
    assert response.headers["x-amzn-errortype"] == "InputValidationError"
    assert "smkit serve" in response.json()["Message"]


def test_container_that_does_not_stream_gives_its_body_as_parts(endpoint, runtime):
    response = _stream(runtime, endpoint, {"chunks": 3, "whole": True})
    body = b"".join(e["PayloadPart"]["Bytes"] for e in response["Body"])
    assert body == b"chunk 0\nchunk 1\nchunk 2\n"


def test_accept_reaches_the_container(endpoint, runtime):
    response = _stream(runtime, endpoint, {"chunks": 1, "echo_accept": True}, Accept="text/x-tokens")
    assert response["ContentType"] == "text/x-tokens"
    assert [e["PayloadPart"]["Bytes"] for e in response["Body"]] == [b"chunk 0\n"]


@pytest.mark.parametrize("variant", ["blue", "green"])
def test_target_variant_and_async_handler(endpoint, runtime, variant):
    response = _stream(runtime, endpoint, {"chunks": 2, "kind": "async"}, TargetVariant=variant)
    assert response["InvokedProductionVariant"] == variant
    assert [e["PayloadPart"]["Bytes"] for e in response["Body"]] == [b"chunk 0\n", b"chunk 1\n"]


def test_errors_before_the_stream(endpoint, runtime, client_error):
    client_error(
        lambda: _stream(runtime, endpoint, {"chunks": 1}, TargetVariant="purple"), "ValidationError", "purple"
    )
    error = client_error(
        lambda: _stream(runtime, endpoint, {"fail_at": 0}), "ModelError", "failed before chunk 0"
    )
    assert error.response["OriginalStatusCode"] == 500
    client_error(
        lambda: runtime.invoke_endpoint_with_response_stream(EndpointName="nope", Body=b"{}"),
        "ValidationError",
        "Endpoint nope",
    )
    client_error(
        lambda: _stream(runtime, endpoint, {"chunks": 1}, InferenceComponentName="writer"),
        "ValidationError",
        "Inference Component Name header is not allowed",
    )


def test_sagemaker_core_stream_call_fails_in_the_sdk_itself(endpoint, monkeypatch):
    """sagemaker-core's ``Endpoint.invoke_with_response_stream`` sends the request (the gateway streams) but
    then fails in its own response transform, on any endpoint: it treats botocore's EventStream as a dict.
    docs/streaming.md says so and recommends boto3; this test notices when a new sagemaker-core fixes it."""
    from sagemaker.core.resources import Endpoint

    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME", endpoint.url)
    session = boto3.Session(aws_access_key_id="local", aws_secret_access_key="local", region_name="us-east-1")
    with pytest.raises(AttributeError, match="'EventStream' object has no attribute 'get'"):
        Endpoint(endpoint_name=endpoint.name).invoke_with_response_stream(
            body=json.dumps({"chunks": 3}), content_type="application/json", session=session
        )


@pytest.fixture(scope="module")
def components(tmp_path_factory):
    root = tmp_path_factory.mktemp("streaming-components")
    config = _project(root, "streaming-components", COMPONENTS, 2)
    with LocalEndpoint(config, root=root, log_dir=root / "logs", model_envs=False) as ep:
        yield ep


def test_inference_component_streams_and_times_out(components, tmp_path):
    runtime = components.client()
    response = runtime.invoke_endpoint_with_response_stream(
        EndpointName=components.name,
        InferenceComponentName="writer",
        ContentType="application/json",
        Body=json.dumps({"chunks": 2}),
    )
    assert [e["PayloadPart"]["Bytes"] for e in response["Body"]] == [b"chunk 0\n", b"chunk 1\n"]
    # Chunk 1 waits for a gate that never opens: the container's 2 s limit ends the stream.
    response = runtime.invoke_endpoint_with_response_stream(
        EndpointName=components.name,
        InferenceComponentName="writer",
        ContentType="application/json",
        Body=json.dumps({"chunks": 3, "gate": str(tmp_path / "never")}),
    )
    parts = []
    with pytest.raises(EventStreamError) as info:
        for event in response["Body"]:
            parts.append(event["PayloadPart"]["Bytes"])
    assert parts == [b"chunk 0\n"]
    assert info.value.response["Error"]["Code"] == "ModelStreamError"
    assert "did not complete sending the inference response in the allotted time" in str(info.value)


def test_cli_prints_parts_as_they_arrive(endpoint, tmp_path):
    gate = tmp_path / "gate"
    request = json.dumps({"chunks": 3, "gate": str(gate)})
    command = [sys.executable, "-m", "smkit.cli", "invoke", "--stream", "--endpoint", endpoint.name]
    command += ["--endpoint-url", endpoint.url, "--region", "us-east-1", "--data", request]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"chunk 0\n"  # printed while chunks 1-2 wait for the gate
        gate.touch()
        rest, errors = proc.communicate(timeout=60)
    assert rest == b"chunk 1\nchunk 2\n", errors
    assert proc.returncode == 0
    assert b"InvokedProductionVariant:" in errors


def test_cli_reports_a_stream_error_after_the_parts(endpoint):
    result = CliRunner().invoke(
        main,
        [
            "invoke",
            "--stream",
            "--endpoint",
            endpoint.name,
            "--endpoint-url",
            endpoint.url,
            "--region",
            "us-east-1",
            "--data",
            json.dumps({"chunks": 3, "fail_at": 1}),
        ],
    )
    assert result.exit_code == 1
    assert result.stdout.startswith("chunk 0\n")
    assert "ModelStreamError" in result.stderr
    usage = CliRunner().invoke(main, ["invoke", "--stream", "--async", "--endpoint", "x", "--data", "{}"])
    assert usage.exit_code == 2 and "--stream and --async are mutually exclusive" in usage.stderr


@pytest.fixture(scope="module")
def serverless(tmp_path_factory):
    root = tmp_path_factory.mktemp("streaming-serverless")
    config = _project(root, "streaming-serverless", SERVERLESS, 60)
    with LocalEndpoint(config, root=root, log_dir=root / "logs", model_envs=False) as ep:
        yield ep


def test_serverless_stream_holds_its_concurrency_until_it_ends(serverless, client_error, tmp_path):
    runtime = serverless.client()
    gate = tmp_path / "gate"
    response = runtime.invoke_endpoint_with_response_stream(
        EndpointName=serverless.name,
        ContentType="application/json",
        Body=json.dumps({"chunks": 2, "gate": str(gate)}),
    )
    events = iter(response["Body"])
    assert next(events)["PayloadPart"]["Bytes"] == b"chunk 0\n"
    client_error(  # MaxConcurrency 1: the stream still runs
        lambda: _stream(runtime, serverless, {"chunks": 1}), "ThrottlingException", "MaxConcurrency=1"
    )
    gate.touch()
    assert [e["PayloadPart"]["Bytes"] for e in events] == [b"chunk 1\n"]
    variant = serverless.runtime.variant("main")
    wait_until(lambda: variant.in_flight == 0, what="the finished stream to release its concurrency")
    assert [e["PayloadPart"]["Bytes"] for e in _stream(runtime, serverless, {"chunks": 1})["Body"]] == [
        b"chunk 0\n"
    ]


PIPELINE = """
name: streaming-pipeline
image: {source: build, context: ., dockerfile: Dockerfile}
model:
  network_isolation: false
  inference_mode: serial
  containers:
    - name: prepare
      model_data: {source: prefix, path: passthrough}
    - name: generator
      model_data: {source: prefix, path: streaming}
endpoint:
  type: multi-container
  variants:
    - {name: main, instance_type: ml.m5.large, initial_instance_count: 1, initial_weight: 1}
"""


def test_serial_pipeline_streams_its_last_container(tmp_path):
    streaming_models.write_model(tmp_path, "passthrough", streaming_models.PASSTHROUGH)
    config = _project(tmp_path, "unused", REALTIME, 60)
    config.write_text(PIPELINE)
    with LocalEndpoint(config, root=tmp_path, log_dir=tmp_path / "logs", model_envs=False) as endpoint:
        gate = tmp_path / "gate"
        response = _stream(endpoint.client(), endpoint, {"chunks": 3, "gate": str(gate)})
        parts = []
        for event in response["Body"]:
            parts.append(event["PayloadPart"]["Bytes"])
            gate.touch()
    assert parts == [b"chunk 0\n", b"chunk 1\n", b"chunk 2\n"]


def test_direct_containers_stream_the_target_container(tmp_path):
    streaming_models.write_model(tmp_path, "passthrough", streaming_models.PASSTHROUGH)
    config = _project(tmp_path, "unused", REALTIME, 60)
    config.write_text(
        PIPELINE.replace("inference_mode: serial", "inference_mode: direct")
        .replace("    - name: prepare\n", "    - name: prepare\n      hostname: prepare\n")
        .replace("    - name: generator\n", "    - name: generator\n      hostname: generator\n")
    )
    with LocalEndpoint(config, root=tmp_path, log_dir=tmp_path / "logs", model_envs=False) as endpoint:
        runtime = endpoint.client()
        response = _stream(runtime, endpoint, {"chunks": 2}, TargetContainerHostname="generator")
        assert [e["PayloadPart"]["Bytes"] for e in response["Body"]] == [b"chunk 0\n", b"chunk 1\n"]
        # The other container answers whole: its body arrives as parts all the same.
        response = _stream(runtime, endpoint, {"chunks": 2}, TargetContainerHostname="prepare")
        assert b"".join(e["PayloadPart"]["Bytes"] for e in response["Body"]) == b'{"chunks": 2}'
