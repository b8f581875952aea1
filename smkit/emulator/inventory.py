"""What a deploy into moto really created, compared with the template; and what a destroy left behind.

moto's CloudFormation marks a stack CREATE_COMPLETE even when it skipped resource types it cannot
emulate. :func:`reconcile` therefore checks every resource of the synthesized template against the stack's
resources: a resource moto did not create is accepted only when its type is listed in :data:`MOTO_SKIPS`
(with the reason), and it is reported, never hidden. Anything else missing is an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# Resource types this kit's templates contain that moto 5.2.5's CloudFormation does not create (it logs
# "No Moto CloudFormation support for ..." and carries on). tests/deploy/test_moto_fixes.py checks each
# entry is still unsupported, so the list shrinks when moto grows.
MOTO_SKIPS: Mapping[str, str] = {
    "AWS::S3::BucketPolicy": "moto has no CloudFormation adapter for bucket policies",
    "AWS::SNS::TopicPolicy": "moto has no CloudFormation adapter for SNS topic policies",
    "AWS::SNS::Subscription": (
        "moto has no CloudFormation adapter for SNS subscriptions (the alarm topic's email/HTTPS subscribers)"
    ),
    "AWS::CDK::Metadata": "CDK's version-reporting marker; there is no AWS resource behind it",
}

SAGEMAKER_TYPES = (
    "AWS::SageMaker::Model",
    "AWS::SageMaker::EndpointConfig",
    "AWS::SageMaker::Endpoint",
    "AWS::SageMaker::InferenceComponent",
)
LIVE_STACK_STATUSES = frozenset(
    {
        "CREATE_IN_PROGRESS",
        "CREATE_COMPLETE",
        "CREATE_FAILED",
        "ROLLBACK_IN_PROGRESS",
        "ROLLBACK_COMPLETE",
        "ROLLBACK_FAILED",
        "DELETE_IN_PROGRESS",
        "DELETE_FAILED",
        "UPDATE_IN_PROGRESS",
        "UPDATE_COMPLETE",
        "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS",
        "UPDATE_ROLLBACK_IN_PROGRESS",
        "UPDATE_ROLLBACK_COMPLETE",
        "UPDATE_ROLLBACK_FAILED",
        "IMPORT_COMPLETE",
    }
)


class DeployMismatch(RuntimeError):
    """The emulated stack lacks resources of the template that moto should have created."""


@dataclass(frozen=True)
class SkippedResource:
    """A template resource moto did not create, with the reason from :data:`MOTO_SKIPS`."""

    stack: str
    logical_id: str
    resource_type: str
    reason: str

    def __str__(self) -> str:
        return f"{self.stack}/{self.logical_id} ({self.resource_type}): {self.reason}"


@dataclass(frozen=True)
class StackResource:
    """One resource moto created for a stack."""

    logical_id: str
    resource_type: str
    physical_id: str


def stack_resources(cloudformation: Any, stack_name: str) -> list[StackResource]:
    """The resources moto created for ``stack_name`` (ListStackResources, all pages)."""
    found: list[StackResource] = []
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=stack_name):
        for item in page["StackResourceSummaries"]:
            # moto lists the resources it skipped as entries without a logical id.
            if item.get("LogicalResourceId"):
                found.append(
                    StackResource(
                        logical_id=item["LogicalResourceId"],
                        resource_type=item["ResourceType"],
                        physical_id=item.get("PhysicalResourceId", ""),
                    )
                )
    return found


def reconcile(
    stack_name: str, template: Mapping[str, Any], created: Iterable[StackResource]
) -> list[SkippedResource]:
    """Template resources moto did not create; raise :class:`DeployMismatch` unless each is in MOTO_SKIPS."""
    made = {r.logical_id for r in created}
    skipped: list[SkippedResource] = []
    unexpected: list[str] = []
    for logical_id, resource in template.get("Resources", {}).items():
        if logical_id in made:
            continue
        resource_type = resource["Type"]
        reason = MOTO_SKIPS.get(resource_type)
        if reason is None:
            unexpected.append(f"{logical_id} ({resource_type})")
        else:
            skipped.append(SkippedResource(stack_name, logical_id, resource_type, reason))
    if unexpected:
        raise DeployMismatch(
            f"moto did not create {len(unexpected)} resource(s) of stack {stack_name}: "
            f"{', '.join(unexpected)}. "
            "If moto cannot emulate that type, add it with the reason to smkit.emulator.inventory.MOTO_SKIPS."
        )
    return skipped


def live_stacks(cloudformation: Any) -> list[str]:
    """Names of stacks that exist (deleted stacks stay listed by ListStacks and are left out)."""
    names: list[str] = []
    for page in cloudformation.get_paginator("list_stacks").paginate():
        names.extend(
            s["StackName"] for s in page["StackSummaries"] if s["StackStatus"] in LIVE_STACK_STATUSES
        )
    return sorted(names)


def sagemaker_resources(sagemaker: Any) -> dict[str, list[str]]:
    """Names of every SageMaker model, endpoint config, endpoint and inference component in the emulator."""
    return {
        "models": sorted(m["ModelName"] for m in sagemaker.list_models()["Models"]),
        "endpoint_configs": sorted(
            c["EndpointConfigName"] for c in sagemaker.list_endpoint_configs()["EndpointConfigs"]
        ),
        "endpoints": sorted(e["EndpointName"] for e in sagemaker.list_endpoints()["Endpoints"]),
        "inference_components": sorted(
            f"{c['InferenceComponentName']} ({c['InferenceComponentStatus']})"
            for c in sagemaker.list_inference_components()["InferenceComponents"]
        ),
    }


def retained_resources(template: Mapping[str, Any]) -> dict[str, str]:
    """Logical id -> type of the template's resources that a stack delete keeps (DeletionPolicy Retain)."""
    return {
        logical_id: resource["Type"]
        for logical_id, resource in template.get("Resources", {}).items()
        if resource.get("DeletionPolicy") == "Retain"
    }
