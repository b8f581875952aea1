"""boto3 access for release steps: clients that honour ``AWS_ENDPOINT_URL`` (so the same code talks to AWS
or to moto's server), the resources and outputs of a deployed stack, and waiting for an endpoint."""

from __future__ import annotations

import time
from typing import Any

from smkit.release.shell import ReleaseError, echo


def client(service: str, region: str | None = None) -> Any:
    """A boto3 client; ``AWS_ENDPOINT_URL`` (moto, LocalStack) is honoured by botocore itself."""
    import boto3

    return boto3.session.Session(region_name=region).client(service)


def stack_resources(stack_name: str, resource_type: str, *, region: str | None = None) -> list[str]:
    """Physical ids of the resources of ``resource_type`` in a deployed stack."""
    cfn = client("cloudformation", region)
    try:
        answer = cfn.describe_stack_resources(StackName=stack_name)
    except cfn.exceptions.ClientError as exc:
        raise ReleaseError(
            f"stack {stack_name!r} not found ({exc.response['Error']['Message']}); deploy it first "
            "or name the stack that was deployed"
        ) from None
    return [
        r["PhysicalResourceId"]
        for r in answer["StackResources"]
        if r["ResourceType"] == resource_type and r.get("PhysicalResourceId")
    ]


def stack_output(stack_name: str, key_suffix: str, *, region: str | None = None) -> str | None:
    """The value of the first stack output whose key ends with ``key_suffix`` (None when absent)."""
    cfn = client("cloudformation", region)
    stacks = cfn.describe_stacks(StackName=stack_name)["Stacks"]
    for output in stacks[0].get("Outputs", []) if stacks else []:
        if output["OutputKey"].endswith(key_suffix):
            return str(output["OutputValue"])
    return None


def endpoint_name_of(stack_name: str, *, region: str | None = None) -> str:
    """The endpoint a serving stack deployed: its output when present, else its Endpoint resource.

    CloudFormation's physical id of ``AWS::SageMaker::Endpoint`` is the endpoint ARN
    (``arn:aws:sagemaker:REGION:ACCOUNT:endpoint/NAME``); endpoint names are case-insensitive.
    """
    name = stack_output(stack_name, "EndpointName", region=region)
    if name:
        return name
    ids = stack_resources(stack_name, "AWS::SageMaker::Endpoint", region=region)
    if len(ids) != 1:
        raise ReleaseError(f"stack {stack_name!r} has {len(ids)} SageMaker endpoints; expected exactly one")
    return ids[0].rsplit("/", 1)[-1] if ids[0].startswith("arn:") else ids[0]


def wait_in_service(endpoint_name: str, *, region: str | None = None, timeout_seconds: int = 3600) -> str:
    """Block until the endpoint is InService; raise with the FailureReason when it fails."""
    sm = client("sagemaker", region)
    delay = 5 if timeout_seconds >= 60 else 1
    deadline = time.monotonic() + timeout_seconds
    while True:
        status = sm.describe_endpoint(EndpointName=endpoint_name)
        state = status["EndpointStatus"]
        if state == "InService":
            echo(f"endpoint {endpoint_name} is InService")
            return str(status["EndpointArn"])
        if state in ("Failed", "OutOfService", "Deleting"):
            reason = status.get("FailureReason", "no FailureReason given")
            raise ReleaseError(f"endpoint {endpoint_name} is {state}: {reason}")
        if time.monotonic() > deadline:
            raise ReleaseError(
                f"endpoint {endpoint_name} still {state} after {timeout_seconds} s; wait longer or look at "
                "the endpoint's CloudWatch logs (/aws/sagemaker/Endpoints/NAME)"
            )
        time.sleep(delay)
