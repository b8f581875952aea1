"""Shared plumbing of the CI entry points (publish_image, deploy, smoke_test, rollback).

Everything here is small and reachable from tests: running a command with an echo, boto3 clients that honour
``AWS_ENDPOINT_URL`` (so the same code talks to AWS or to moto's server), finding the resources of a deployed
stack, and the release record that ``rollback`` reads.

Why the release record lives in SSM and not in stack outputs or tags: stack outputs are not returned by
moto for change-set deploys (docs/toolchain.md), and stack-level tags propagate to every resource, so writing the
previous release into them would update the Model and EndpointConfig on each deploy. One String parameter per
deployment (``/smkit/<name>/<environment>/releases``) holds the last releases as JSON; it is readable with
``aws ssm get-parameter`` and costs nothing.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
RELEASE_HISTORY = 10
# A standard SSM String parameter holds at most 4 KB.
# https://docs.aws.amazon.com/systems-manager/latest/userguide/parameter-store-advanced-parameters.html
SSM_STANDARD_LIMIT = 4096


class ReleaseError(RuntimeError):
    """A CI step that cannot go on; the message says what failed and what to do."""


def echo(message: str) -> None:
    """Progress goes to stderr so that stdout carries only the result (an URI, an endpoint name)."""
    print(message, file=sys.stderr, flush=True)


def run(argv: Sequence[str], *, cwd: Path = REPO_ROOT, env: Mapping[str, str] | None = None) -> None:
    """Run one command, echoing it first; raise :class:`ReleaseError` with its exit code on failure."""
    echo(f"+ {shlex.join(argv)}")
    try:
        result = subprocess.run(list(argv), cwd=cwd, env=dict(env) if env is not None else None, check=False)
    except FileNotFoundError:
        raise ReleaseError(f"{argv[0]}: command not found; install it or put it on PATH") from None
    if result.returncode != 0:
        raise ReleaseError(f"{shlex.join(argv)} failed with exit code {result.returncode}")


def run_all(commands: Sequence[Sequence[str]], *, dry_run: bool) -> bool:
    """Run the commands in order (see :func:`run`), or with ``dry_run`` only print them; True if they ran."""
    if dry_run:
        for argv in commands:
            print(shlex.join(argv))
        return False
    for argv in commands:
        run(argv)
    return True


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
            "(scripts/deploy.py) or pass the right --stack"
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
                f"endpoint {endpoint_name} still {state} after {timeout_seconds} s; raise --timeout or "
                "look at the endpoint's CloudWatch logs (/aws/sagemaker/Endpoints/NAME)"
            )
        time.sleep(delay)


@dataclass(frozen=True)
class DeployedContainer:
    """What one container of the deployed Model runs: the image URI and its model data location."""

    image: str
    model_data: str | None
    data_type: str = "archive"  # archive | prefix | multi-model, as in the config's model_data.source


@dataclass(frozen=True)
class Release:
    """One successful deploy: the image and model data every container ran, and where it came from."""

    endpoint: str
    containers: tuple[DeployedContainer, ...]
    deployed_at: str
    image_tag: str | None = None
    note: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["containers"] = [asdict(c) for c in self.containers]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Release:
        containers = tuple(DeployedContainer(**c) for c in data["containers"])
        return cls(**{**data, "containers": containers})


def describe_release(endpoint_name: str, *, image_tag: str | None, note: str, region: str | None) -> Release:
    """Read back, from SageMaker itself, what the endpoint now runs."""
    sm = client("sagemaker", region)
    endpoint = sm.describe_endpoint(EndpointName=endpoint_name)
    config = sm.describe_endpoint_config(EndpointConfigName=endpoint["EndpointConfigName"])
    # Production models, then shadow models; an inference-component endpoint's variant has no model of its
    # own and its models are the components' (in the order of the components' names).
    variants = [*config["ProductionVariants"], *config.get("ShadowProductionVariants", [])]
    model_names = list(dict.fromkeys(v["ModelName"] for v in variants if v.get("ModelName")))
    pools = [v for v in config["ProductionVariants"] if not v.get("ModelName")]
    components = (
        sm.list_inference_components(EndpointNameEquals=endpoint_name)["InferenceComponents"] if pools else []
    )
    for summary in sorted(components, key=lambda c: c["InferenceComponentName"]):
        name = summary["InferenceComponentName"]
        model_names.append(
            sm.describe_inference_component(InferenceComponentName=name)["Specification"]["ModelName"]
        )
    containers: list[DeployedContainer] = []
    for model_name in model_names:
        model = sm.describe_model(ModelName=model_name)
        for definition in model.get("Containers") or [model["PrimaryContainer"]]:
            containers.append(_deployed_container(definition))
    return Release(
        endpoint=endpoint_name,
        containers=tuple(containers),
        deployed_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        image_tag=image_tag,
        note=note,
    )


def _deployed_container(definition: Mapping[str, Any]) -> DeployedContainer:
    source = definition.get("ModelDataSource", {}).get("S3DataSource")
    if source:
        return DeployedContainer(image=definition["Image"], model_data=source["S3Uri"], data_type="prefix")
    kind = "multi-model" if definition.get("Mode") == "MultiModel" else "archive"
    return DeployedContainer(
        image=definition["Image"], model_data=definition.get("ModelDataUrl"), data_type=kind
    )


def release_parameter(name: str, environment: str) -> str:
    """The SSM parameter that keeps the release history of one deployment."""
    return f"/smkit/{name}/{environment}/releases"


def read_releases(parameter: str, *, region: str | None = None) -> list[Release]:
    """The recorded releases, oldest first (empty when nothing was recorded yet)."""
    ssm = client("ssm", region)
    try:
        value = ssm.get_parameter(Name=parameter)["Parameter"]["Value"]
    except ssm.exceptions.ParameterNotFound:
        return []
    return [Release.from_json(item) for item in json.loads(value)]


def record_release(parameter: str, release: Release, *, region: str | None = None) -> list[Release]:
    """Append ``release`` to the history (keeping the last few that fit in one standard parameter)."""
    history = [*read_releases(parameter, region=region), release][-RELEASE_HISTORY:]
    while True:
        value = json.dumps([r.to_json() for r in history], separators=(",", ":"))
        if len(value.encode()) <= SSM_STANDARD_LIMIT or len(history) == 1:
            break
        history = history[1:]
    client("ssm", region).put_parameter(
        Name=parameter,
        Value=value,
        Type="String",
        Overwrite=True,
        Description="smkit release history (scripts/deploy.py); read by scripts/rollback.py",
    )
    return history
