"""SigV4 checked like SageMaker (``--verify-signatures``): the unmodified boto3 client signs, the local
endpoint recomputes the signature with botocore's signer and refuses what the service refuses, with the
service's status, code and message; the endpoint keeps serving after each refusal."""

from __future__ import annotations

import datetime as dt
import json

import boto3
import botocore.auth
import httpx
import pytest
from botocore import UNSIGNED
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from chat_handler import REALTIME, project
from click.testing import CliRunner

from smkit.cli import main
from smkit.local import LocalEndpoint
from smkit.local.auth import BAD_SIGNATURE

KEY, SECRET = "AKIDSMKITLOCALTEST", "a-secret-the-endpoint-knows"
BODY = json.dumps({"model": "", "messages": [{"role": "user", "content": "hello there"}]})


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    root = tmp_path_factory.mktemp("signatures")
    config = project(root, "signed", REALTIME)
    settings = {"root": root, "log_dir": root / "logs", "model_envs": False}
    with LocalEndpoint(config, verify_signatures=True, credentials=((KEY, SECRET),), **settings) as ep:
        yield ep


def _client(endpoint, *, key=KEY, secret=SECRET, region="us-east-1", **config):
    return boto3.client(
        "sagemaker-runtime",
        endpoint_url=endpoint.url,
        region_name=region,
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        config=Config(retries={"total_max_attempts": 1}, **config),
    )


def _invoke(client, endpoint):
    return client.invoke_endpoint(EndpointName=endpoint.name, ContentType="application/json", Body=BODY)


def _still_serving(endpoint):
    answer = json.loads(_invoke(endpoint.client(), endpoint)["Body"].read())
    assert answer["choices"][0]["message"]["content"] == "echo: hello there"


def test_right_credentials_are_accepted(endpoint):
    response = _invoke(_client(endpoint), endpoint)
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert json.loads(response["Body"].read())["choices"][0]["message"]["content"] == "echo: hello there"
    # The pair LocalEndpoint.client() signs with is always known.
    assert _invoke(endpoint.client(), endpoint)["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_wrong_secret_is_refused(endpoint, client_error):
    error = client_error(
        lambda: _invoke(_client(endpoint, secret="not-the-secret"), endpoint),
        "InvalidSignatureException",
        BAD_SIGNATURE,
    )
    assert error.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    _still_serving(endpoint)


def test_wrong_region_is_refused(endpoint, client_error):
    error = client_error(
        lambda: _invoke(_client(endpoint, region="us-west-2"), endpoint),
        "InvalidSignatureException",
        "Credential should be scoped to a valid region, not 'us-west-2'.",
    )
    assert error.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    _still_serving(endpoint)


def test_twenty_minutes_of_clock_skew_is_refused(endpoint, client_error, monkeypatch):
    # The client's clock runs 20 minutes late: botocore stamps X-Amz-Date from it.
    late = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(minutes=20)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: late)
    error = client_error(
        lambda: _invoke(_client(endpoint), endpoint), "InvalidSignatureException", "Signature expired: "
    )
    assert error.response["Error"]["Message"].startswith(
        f"Signature expired: {late:%Y%m%dT%H%M%SZ} is now earlier than "
    )
    assert error.response["Error"]["Message"].endswith(" - 5 min.)")
    assert error.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    monkeypatch.undo()
    _still_serving(endpoint)


def test_a_clock_twenty_minutes_ahead_is_refused(endpoint, client_error, monkeypatch):
    early = dt.datetime.now(dt.UTC).replace(tzinfo=None) + dt.timedelta(minutes=20)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: early)
    error = client_error(
        lambda: _invoke(_client(endpoint), endpoint),
        "InvalidSignatureException",
        "Signature not yet current: ",
    )
    assert error.response["Error"]["Message"].endswith(" + 5 min.)")


def test_unknown_access_key_is_refused(endpoint, client_error):
    client_error(
        lambda: _invoke(_client(endpoint, key="AKIDNOBODYKNOWS"), endpoint),
        "UnrecognizedClientException",
        "The security token included in the request is invalid.",
    )


def test_unsigned_request_is_refused(endpoint, client_error):
    error = client_error(
        lambda: _invoke(_client(endpoint, signature_version=UNSIGNED), endpoint),
        "MissingAuthenticationTokenException",
        "Missing Authentication Token",
    )
    assert error.response["ResponseMetadata"]["HTTPStatusCode"] == 403


def _signed(endpoint, body: bytes, **headers: str) -> AWSRequest:
    request = AWSRequest(
        method="POST",
        url=f"{endpoint.url}/endpoints/{endpoint.name}/invocations",
        data=body,
        headers={"Content-Type": "application/json", **headers},
    )
    SigV4Auth(Credentials(KEY, SECRET), "sagemaker", "us-east-1").add_auth(request)
    return request


def test_a_body_other_than_the_signed_one_is_refused(endpoint):
    request = _signed(endpoint, BODY.encode())
    headers = dict(request.headers.items())
    ok = httpx.post(request.url, content=BODY.encode(), headers=headers)
    assert ok.status_code == 200, ok.text
    tampered = httpx.post(request.url, content=BODY.replace("hello", "HELLO").encode(), headers=headers)
    assert tampered.status_code == 403
    assert tampered.headers["x-amzn-ErrorType"] == "InvalidSignatureException"
    assert tampered.json() == {"message": BAD_SIGNATURE}


def test_a_payload_hash_header_that_does_not_match_the_body_is_refused(endpoint):
    request = _signed(endpoint, BODY.encode(), **{"X-Amz-Content-SHA256": "0" * 64})
    answer = httpx.post(request.url, content=BODY.encode(), headers=dict(request.headers.items()))
    assert answer.status_code == 403
    assert answer.json() == {"message": BAD_SIGNATURE}


def test_a_malformed_authorization_header_is_refused(endpoint):
    request = _signed(endpoint, BODY.encode())
    headers = dict(request.headers.items())
    headers["Authorization"] = "AWS4-HMAC-SHA256 Credential=only-this"
    answer = httpx.post(request.url, content=BODY.encode(), headers=headers)
    assert answer.status_code == 400
    assert answer.headers["x-amzn-ErrorType"] == "IncompleteSignatureException"
    assert "Authorization header requires 'SignedHeaders' parameter." in answer.json()["message"]
    assert "Authorization header requires 'Signature' parameter." in answer.json()["message"]


def test_streaming_calls_are_checked_too(endpoint, client_error):
    client_error(
        lambda: _client(endpoint, secret="wrong").invoke_endpoint_with_response_stream(
            EndpointName=endpoint.name, ContentType="application/json", Body=BODY
        ),
        "InvalidSignatureException",
        BAD_SIGNATURE,
    )
    stream = _client(endpoint).invoke_endpoint_with_response_stream(
        EndpointName=endpoint.name, ContentType="application/json", Body=BODY
    )
    body = b"".join(event["PayloadPart"]["Bytes"] for event in stream["Body"] if "PayloadPart" in event)
    assert json.loads(body)["choices"][0]["message"]["content"] == "echo: hello there"


def test_the_config_setting_turns_checking_on(tmp_path, client_error):
    config = project(tmp_path, "signed-by-config", REALTIME)
    config.write_text(config.read_text() + "local: {verify_signatures: true}\n")
    with LocalEndpoint(config, root=tmp_path, log_dir=tmp_path / "logs", model_envs=False) as endpoint:
        assert endpoint.verifies_signatures
        client_error(
            lambda: _invoke(_client(endpoint, key="local", secret="wrong"), endpoint),
            "InvalidSignatureException",
            BAD_SIGNATURE,
        )
        assert _invoke(endpoint.client(), endpoint)["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_an_unknown_local_setting_is_refused_with_its_path(tmp_path):
    from smkit.config import ConfigError, load_config

    config = project(tmp_path, "typo", REALTIME)
    config.write_text(config.read_text() + "local: {verify_signature: true}\n")
    with pytest.raises(ConfigError, match="local.verify_signature"):
        load_config(config)


def test_the_cli_flag_is_offered():
    result = CliRunner().invoke(main, ["local-endpoint", "--help"])
    assert "--verify-signatures" in result.output
