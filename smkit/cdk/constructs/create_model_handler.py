"""The Lambda handler of ``Custom::SageMakerModel``: a SageMaker Model created through the API.

CloudFormation's ``AWS::SageMaker::Model`` has no ``AdditionalModelDataSources``, which CreateModel takes
(https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateModel.html). The resource's properties
are CreateModel's request without ``ModelName``; CloudFormation hands them over with every scalar as a
string, so they are typed again by CreateModel's input shape (botocore's, in the function's runtime) before
the call. The model is named ``<ModelNamePrefix>-<12 hex digits of the request's sha256>``: a changed
request is a new model (a new physical id, so CloudFormation deletes the old one once the update is done), the
same request the same model (a retried Create finds it). Delete removes the model named by the physical id, and
succeeds when it is already gone. The answer goes to CloudFormation's pre-signed ``ResponseURL``
(https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-responses.html).

This file is the function's whole code (inline in the template); it imports only the Python standard library
and boto3, which the Lambda runtime provides.
"""

from __future__ import annotations

import hashlib
import json
import urllib.request
from typing import Any

import boto3

PREFIX = "ModelNamePrefix"
NOT_REQUEST = ("ServiceToken", PREFIX)


def typed(value: Any, shape: Any) -> Any:
    """``value`` as ``shape`` wants it: CloudFormation's strings made booleans and integers again."""
    kind = shape.type_name
    if kind == "structure" and isinstance(value, dict):
        return {k: typed(v, shape.members[k]) if k in shape.members else v for k, v in value.items()}
    if kind == "list" and isinstance(value, list):
        return [typed(v, shape.member) for v in value]
    if kind == "map" and isinstance(value, dict):
        return {k: typed(v, shape.value) for k, v in value.items()}
    if kind == "boolean" and isinstance(value, str):
        return value.lower() == "true"
    if kind in ("integer", "long") and isinstance(value, str):
        return int(value)
    return value


def model_name(prefix: str, request: dict[str, Any]) -> str:
    """The name of the model ``request`` creates: the prefix and the request's digest."""
    digest = hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()
    return f"{prefix}-{digest[:12]}"


def create(client: Any, properties: dict[str, Any]) -> tuple[str, str]:
    """CreateModel (unless a retried Create already made it); ``(name, arn)``."""
    shape = client.meta.service_model.operation_model("CreateModel").input_shape
    request = typed({k: v for k, v in properties.items() if k not in NOT_REQUEST}, shape)
    name = model_name(properties[PREFIX], request)
    try:
        return name, str(client.describe_model(ModelName=name)["ModelArn"])
    except client.exceptions.ClientError as exc:
        if "Could not find model" not in str(exc):
            raise
    return name, str(client.create_model(ModelName=name, **request)["ModelArn"])


def delete(client: Any, name: str, prefix: str) -> None:
    """DeleteModel ``name``; nothing when it is gone, or when it is not a name this resource gave."""
    if not name.startswith(f"{prefix}-"):
        return  # a Create that failed before naming a model: CloudFormation deletes what it never made
    try:
        client.delete_model(ModelName=name)
    except client.exceptions.ClientError as exc:
        if "Could not find model" not in str(exc):
            raise


def respond(
    event: dict[str, Any], status: str, physical_id: str, reason: str = "", data: dict[str, str] | None = None
) -> None:
    """Answer CloudFormation at the request's pre-signed URL."""
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason[:3000],
            "PhysicalResourceId": physical_id,
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "Data": data or {},
        }
    ).encode()
    request = urllib.request.Request(
        event["ResponseURL"], data=body, method="PUT", headers={"Content-Type": ""}
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        answer.read()


def handler(event: dict[str, Any], context: Any, client: Any = None) -> None:
    """CloudFormation's Create, Update and Delete of one ``Custom::SageMakerModel`` (``client``: a SageMaker
    client, boto3's default one when None)."""
    client = client or boto3.client("sagemaker")
    properties = event["ResourceProperties"]
    physical_id = event.get("PhysicalResourceId") or f"{event['LogicalResourceId']}-not-created"
    try:
        if event["RequestType"] == "Delete":
            delete(client, physical_id, properties[PREFIX])
            respond(event, "SUCCESS", physical_id)
            return
        name, arn = create(client, properties)
        respond(event, "SUCCESS", name, data={"ModelName": name, "ModelArn": arn})
    except Exception as exc:  # every failure is reported to CloudFormation, which would wait an hour
        respond(event, "FAILED", physical_id, reason=f"{type(exc).__name__}: {exc}")
