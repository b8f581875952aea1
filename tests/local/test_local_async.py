"""Async endpoint (config/async.yaml) against moto's S3: InvokeEndpointAsync with s3:// and file:// input,
output and failure objects, notifications, and the ValidationErrors of the API."""

from __future__ import annotations

import json

import httpx
import pytest
from click.testing import CliRunner

from smkit.cli import main
from smkit.local import LocalEndpoint

BUCKET = "smkit-async"
BASE = f"s3://{BUCKET}/endpoint"


@pytest.fixture(scope="module")
def stack(repo, tmp_path_factory, moto_server):
    """The async endpoint, its S3 on the session's moto server (the endpoint needs S3 only per request)."""
    endpoint = LocalEndpoint(
        repo / "config" / "async.yaml",
        root=repo,
        async_output=BASE,
        s3_endpoint_url=moto_server.endpoint_url,
        notification_log=tmp_path_factory.mktemp("async") / "notifications.jsonl",
    )
    with endpoint:
        client = moto_server.client("s3")
        client.create_bucket(Bucket=BUCKET)
        yield moto_server, client, endpoint


@pytest.fixture(scope="module")
def s3(stack):
    aws, client, _endpoint = stack
    return aws, client


@pytest.fixture(scope="module")
def endpoint(stack):
    return stack[2]


@pytest.fixture(scope="module")
def runtime(endpoint):
    return endpoint.client()


def _object(client, uri: str) -> bytes:
    bucket, key = uri.removeprefix("s3://").split("/", 1)
    return client.get_object(Bucket=bucket, Key=key)["Body"].read()


def _exists(client, uri: str) -> bool:
    bucket, key = uri.removeprefix("s3://").split("/", 1)
    return client.list_objects_v2(Bucket=bucket, Prefix=key)["KeyCount"] > 0


def test_s3_input_writes_the_output_object(endpoint, runtime, s3, sample):
    _aws, client = s3
    client.put_object(Bucket=BUCKET, Key="in/request.csv", Body=sample("tabular", "request.csv"))
    resp = runtime.invoke_endpoint_async(
        EndpointName=endpoint.name,
        InputLocation=f"s3://{BUCKET}/in/request.csv",
        ContentType="text/csv",
        Accept="application/json",
        InferenceId="request-0001",
    )
    assert resp["ResponseMetadata"]["HTTPStatusCode"] == 202
    assert resp["InferenceId"] == "request-0001"
    assert resp["OutputLocation"] == f"{BASE}/async/output/request-0001.out"
    assert resp["FailureLocation"] == f"{BASE}/async/failure/request-0001-error.out"
    endpoint.wait_for_async()
    expected = json.loads(sample("tabular", "expected.json"))
    answer = json.loads(_object(client, resp["OutputLocation"]))
    assert answer["predictions"] == pytest.approx(expected["predictions"], rel=expected["rtol"])
    assert not _exists(client, resp["FailureLocation"])


def test_file_input_and_generated_inference_id(endpoint, runtime, s3, sample, tmp_path):
    _aws, client = s3
    request = tmp_path / "request.json"
    request.write_bytes(sample("tabular", "request.json"))
    resp = runtime.invoke_endpoint_async(
        EndpointName=endpoint.name, InputLocation=request.as_uri(), ContentType="application/json"
    )
    assert resp["OutputLocation"].endswith(f"/{resp['InferenceId']}.out")
    endpoint.wait_for_async()
    assert "predictions" in json.loads(_object(client, resp["OutputLocation"]))


def test_container_error_writes_the_failure_object(endpoint, runtime, s3):
    _aws, client = s3
    client.put_object(Bucket=BUCKET, Key="in/bad.csv", Body=b"1,2,x\n")
    resp = runtime.invoke_endpoint_async(
        EndpointName=endpoint.name, InputLocation=f"s3://{BUCKET}/in/bad.csv", ContentType="text/csv"
    )
    endpoint.wait_for_async()
    failure = _object(client, resp["FailureLocation"]).decode()
    assert "Received client error (400) from primary" in failure
    assert not _exists(client, resp["OutputLocation"])


def test_missing_input_object_fails_the_request(endpoint, runtime, s3):
    _aws, client = s3
    resp = runtime.invoke_endpoint_async(
        EndpointName=endpoint.name, InputLocation=f"s3://{BUCKET}/in/missing.csv", ContentType="text/csv"
    )
    endpoint.wait_for_async()
    assert "Failed to read the input" in _object(client, resp["FailureLocation"]).decode()


def test_notifications_are_logged_for_successes_and_failures(endpoint, runtime, s3, sample):
    # Its own requests: pytest-xdist may run this module's other tests in another process.
    _aws, client = s3
    client.put_object(Bucket=BUCKET, Key="in/notify-ok.csv", Body=sample("tabular", "request.csv"))
    client.put_object(Bucket=BUCKET, Key="in/notify-bad.csv", Body=b"1,2,x\n")
    for name in ("ok", "bad"):
        runtime.invoke_endpoint_async(
            EndpointName=endpoint.name,
            InputLocation=f"s3://{BUCKET}/in/notify-{name}.csv",
            ContentType="text/csv",
            InferenceId=f"notify-{name}",
        )
    endpoint.wait_for_async()
    log = endpoint.runtime.asynchronous.notification_log
    events = [json.loads(line) for line in log.read_text().splitlines()]
    statuses = {e["inferenceId"]: e["invocationStatus"] for e in events}
    assert statuses["notify-ok"] == "Completed"
    assert statuses["notify-bad"] == "Failed"
    completed = next(e for e in events if e["inferenceId"] == "notify-ok")
    assert completed["responseParameters"]["outputLocation"] == f"{BASE}/async/output/notify-ok.out"
    assert completed["eventSource"] == "aws:sagemaker"


def test_sync_call_to_an_async_endpoint_is_rejected(endpoint, runtime, client_error):
    client_error(
        lambda: runtime.invoke_endpoint(EndpointName=endpoint.name, ContentType="text/csv", Body=b"1"),
        "ValidationError",
        "accepts only InvokeEndpointAsync",
    )


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "InputLocation is required"),
        ({"InputLocation": "http://example.com/x"}, "is not supported; use s3://BUCKET/KEY"),
    ],
)
def test_invalid_async_requests_are_validation_errors(endpoint, runtime, client_error, params, message):
    client_error(
        lambda: runtime.invoke_endpoint_async(EndpointName=endpoint.name, ContentType="text/csv", **params),
        "ValidationError",
        message,
    )


@pytest.mark.parametrize(
    ("header", "value", "message"),
    [
        ("X-Amzn-SageMaker-RequestTTLSeconds", "5", "must be an integer from 60 to 21600"),
        ("X-Amzn-SageMaker-InvocationTimeoutSeconds", "3601", "must be an integer from 1 to 3600"),
        ("X-Amzn-SageMaker-InvocationTimeoutSeconds", "soon", "must be an integer from 1 to 3600"),
    ],
)
def test_out_of_range_seconds_are_validation_errors(endpoint, header, value, message):
    # botocore checks these ranges before sending, so other clients are what the gateway guards against.
    resp = httpx.post(
        f"{endpoint.url}/endpoints/{endpoint.name}/async-invocations",
        headers={"X-Amzn-SageMaker-InputLocation": f"s3://{BUCKET}/in/request.csv", header: value},
    )
    assert resp.status_code == 400
    assert resp.headers["x-amzn-ErrorType"] == "ValidationError"
    assert message in resp.json()["message"]


def _cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_cli_async_invoke_polls_s3_and_decodes_by_the_stored_content_type(endpoint, s3, repo):
    aws, _client = s3
    result = _cli(
        "invoke",
        "--endpoint",
        endpoint.name,
        "--endpoint-url",
        endpoint.url,
        "--s3-endpoint-url",
        aws.endpoint_url,
        "--async",
        "--content-type",
        "text/csv",
        "--accept",
        "application/json",
        "--data",
        f"@{repo / 'model_code/tabular/samples/request.csv'}",
        "--timeout",
        "60",
    )
    assert result.exit_code == 0, result.output
    assert f"OutputLocation: {BASE}/async/output/" in result.stderr
    assert len(json.loads(result.stdout)["predictions"]) == 10


def test_cli_async_invoke_reports_the_failure_object(endpoint, s3):
    aws, _client = s3
    result = _cli(
        "invoke",
        "--endpoint",
        endpoint.name,
        "--endpoint-url",
        endpoint.url,
        "--s3-endpoint-url",
        aws.endpoint_url,
        "--async",
        "--content-type",
        "text/csv",
        "--data",
        "1,2,x",
        "--timeout",
        "60",
    )
    assert result.exit_code == 1
    assert "inference failed" in result.stderr and "-error.out" in result.stderr


def test_cli_smoke_test_of_the_async_endpoint(endpoint, s3, repo):
    aws, _client = s3
    result = _cli(
        "smoke-test",
        "--config",
        str(repo / "config/async.yaml"),
        "--endpoint-url",
        endpoint.url,
        "--s3-endpoint-url",
        aws.endpoint_url,
        "--root",
        str(repo),
    )
    assert result.exit_code == 0, result.output
    assert "smoke-test of tabular-async: 3 of 3 cases passed" in result.stdout


def test_an_asynchronous_endpoint_has_no_openai_route(endpoint, no_openai_route):
    no_openai_route(endpoint, "accepts only InvokeEndpointAsync")
