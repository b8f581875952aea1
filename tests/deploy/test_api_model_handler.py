"""The function behind ``Custom::SageMakerModel`` (smkit/cdk/constructs/create_model_handler.py, the code the
template carries inline), run as CloudFormation runs it: events whose properties are all strings, CreateModel
and DeleteModel against the emulator's SageMaker (moto's server), the answer PUT to a pre-signed URL (a real
HTTP server on 127.0.0.1)."""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import pytest

HANDLER = Path(__file__).resolve().parents[2] / "smkit" / "cdk" / "constructs" / "create_model_handler.py"
ROLE = "arn:aws:iam::123456789012:role/serving"


def _module() -> ModuleType:
    """The handler file as Lambda loads it: on its own (not through smkit.cdk, which imports aws-cdk-lib)."""
    spec = importlib.util.spec_from_file_location("index", HANDLER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Answers:
    """CloudFormation's side: a pre-signed URL that records every PUT body."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        received = self.bodies

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:  # noqa: N802 - http.server's hook name
                length = int(self.headers["Content-Length"])
                received.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's signature
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/response?signature=x"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture()
def answers() -> Iterator[Answers]:
    recorder = Answers()
    yield recorder
    recorder.server.shutdown()
    recorder.server.server_close()


def _properties(prefix: str, **environment: str) -> dict[str, Any]:
    """A Custom::SageMakerModel's properties as CloudFormation passes them: every scalar a string."""
    return {
        "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:handler",
        "ModelNamePrefix": prefix,
        "ExecutionRoleArn": ROLE,
        "EnableNetworkIsolation": "true",
        "PrimaryContainer": {
            "Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/vllm:0.11",
            "Mode": "SingleModel",
            "Environment": {"DRAFT_MODEL": "/opt/ml/additional-model-data-sources/draft", **environment},
            "ModelDataSource": {
                "S3DataSource": {
                    "S3Uri": "s3://models/llm/",
                    "S3DataType": "S3Prefix",
                    "CompressionType": "None",
                }
            },
            "AdditionalModelDataSources": [
                {
                    "ChannelName": "draft",
                    "S3DataSource": {
                        "S3Uri": "s3://models/draft/",
                        "S3DataType": "S3Prefix",
                        "CompressionType": "None",
                        "ModelAccessConfig": {"AcceptEula": "true"},
                    },
                },
                {
                    "ChannelName": "lookup.v2",
                    "S3DataSource": {
                        "S3Uri": "s3://models/lookup.tar.gz",
                        "S3DataType": "S3Object",
                        "CompressionType": "Gzip",
                    },
                },
            ],
        },
    }


def _event(kind: str, properties: dict[str, Any], url: str, physical_id: str | None = None) -> dict[str, Any]:
    event = {
        "RequestType": kind,
        "ResponseURL": url,
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/serving/1",
        "RequestId": f"request-{kind}",
        "LogicalResourceId": "ModelApi1234",
        "ResourceType": "Custom::SageMakerModel",
        "ResourceProperties": properties,
    }
    if physical_id is not None:
        event["PhysicalResourceId"] = physical_id
    return event


def test_create_update_and_delete_a_model_with_channels(aws: Any, answers: Answers) -> None:
    module = _module()
    sagemaker = boto3.client("sagemaker", endpoint_url=aws.endpoint_url)
    prefix = "tabularchannelsmodelapi12ab34cd"
    first = _properties(prefix)

    module.handler(_event("Create", first, answers.url), None, client=sagemaker)
    created = answers.bodies[-1]
    assert created["Status"] == "SUCCESS", created
    name = created["PhysicalResourceId"]
    assert name.startswith(f"{prefix}-") and len(name) == len(prefix) + 13
    assert created["Data"] == {
        "ModelName": name,
        "ModelArn": sagemaker.describe_model(ModelName=name)["ModelArn"],
    }
    described = sagemaker.describe_model(ModelName=name)["PrimaryContainer"]
    channels = described["AdditionalModelDataSources"]
    assert [c["ChannelName"] for c in channels] == ["draft", "lookup.v2"]
    # The strings CloudFormation passes are typed again by CreateModel's input shape.
    assert channels[0]["S3DataSource"]["ModelAccessConfig"] == {"AcceptEula": True}
    assert channels[1]["S3DataSource"] == {
        "S3Uri": "s3://models/lookup.tar.gz",
        "S3DataType": "S3Object",
        "CompressionType": "Gzip",
    }

    # A retried Create (the same request) finds the model it made.
    module.handler(_event("Create", first, answers.url), None, client=sagemaker)
    assert answers.bodies[-1]["PhysicalResourceId"] == name

    # An update that changes the request is a new model; CloudFormation then deletes the old one.
    changed = _properties(prefix, NUM_SPECULATIVE_TOKENS="3")
    module.handler(_event("Update", changed, answers.url, name), None, client=sagemaker)
    renamed = answers.bodies[-1]["PhysicalResourceId"]
    assert answers.bodies[-1]["Status"] == "SUCCESS" and renamed != name
    module.handler(_event("Delete", first, answers.url, name), None, client=sagemaker)
    assert answers.bodies[-1]["Status"] == "SUCCESS"
    names = {m["ModelName"] for m in sagemaker.list_models()["Models"]}
    assert renamed in names and name not in names

    # Deleting what is gone succeeds; so does deleting a resource whose Create never named a model.
    module.handler(_event("Delete", first, answers.url, name), None, client=sagemaker)
    module.handler(_event("Delete", first, answers.url, "ModelApi1234-not-created"), None, client=sagemaker)
    assert [b["Status"] for b in answers.bodies[-2:]] == ["SUCCESS", "SUCCESS"]
    module.handler(_event("Delete", changed, answers.url, renamed), None, client=sagemaker)
    assert renamed not in {m["ModelName"] for m in sagemaker.list_models()["Models"]}


def test_a_refused_request_fails_the_resource_with_sagemakers_reason(aws: Any, answers: Answers) -> None:
    module = _module()
    sagemaker = boto3.client("sagemaker", endpoint_url=aws.endpoint_url)
    properties = _properties("refusedmodelapi")
    properties["PrimaryContainer"]["AdditionalModelDataSources"][0]["Channel"] = "typo"
    module.handler(_event("Create", properties, answers.url), None, client=sagemaker)
    answer = answers.bodies[-1]
    assert answer["Status"] == "FAILED"
    assert answer["PhysicalResourceId"] == "ModelApi1234-not-created"
    assert "ParamValidationError" in answer["Reason"] and "Channel" in answer["Reason"]
