"""Record cdk-nag acknowledgements next to the resource they are about.

cdk-nag 3 is a CDK policy-validation plugin; a finding is silenced with CDK's own
``Validations.of(scope).acknowledge(...)`` (docs/toolchain.md), which applies to ``scope`` and its children.
"""

from __future__ import annotations

from collections.abc import Mapping

import aws_cdk as cdk
from constructs import Construct, IConstruct


def acknowledge(scope: IConstruct, reasons: Mapping[str, str]) -> None:
    """Acknowledge each ``rule id -> reason`` on ``scope`` (ids may carry a finding, e.g. ``[Resource::*]``)."""
    cdk.Validations.of(scope).acknowledge(
        *(cdk.Acknowledgment(id=rule, reason=reason) for rule, reason in reasons.items())
    )


def logical_id_of(construct: IConstruct) -> str:
    """The logical id of ``construct``'s resource (a bucket, a log group), as cdk-nag spells it in finding ids
    (``<LogicalId.Arn>``)."""
    resource = construct.node.default_child
    assert isinstance(resource, cdk.CfnElement)
    return str(cdk.Stack.of(construct).resolve(resource.logical_id))


def nag_environment(scope: Construct) -> tuple[str, str, str]:
    """``(partition, region, account)`` as cdk-nag spells them in finding ids: pseudo parameters such as
    ``<AWS::Region>``, or literal values when the stack has a concrete account and region (a pipeline stage)."""
    stack = cdk.Stack.of(scope)

    def part(value: str, pseudo: str) -> str:
        return pseudo if cdk.Token.is_unresolved(value) else value

    return (
        part(stack.partition, "<AWS::Partition>"),
        part(stack.region, "<AWS::Region>"),
        part(stack.account, "<AWS::AccountId>"),
    )


def nag_arn(scope: Construct, service: str, resource: str) -> str:
    """An ARN in ``scope``'s account and region as cdk-nag spells it in finding ids."""
    partition, region, account = nag_environment(scope)
    return f"arn:{partition}:{service}:{region}:{account}:{resource}"
