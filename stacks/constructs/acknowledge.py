"""Record cdk-nag acknowledgements next to the resource they are about.

cdk-nag 3 is a CDK policy-validation plugin; a finding is silenced with CDK's own
``Validations.of(scope).acknowledge(...)`` (REFERENCE §8), which applies to ``scope`` and its children.
"""

from __future__ import annotations

from collections.abc import Mapping

import aws_cdk as cdk
from constructs import IConstruct


def acknowledge(scope: IConstruct, reasons: Mapping[str, str]) -> None:
    """Acknowledge each ``rule id -> reason`` on ``scope`` (ids may carry a finding, e.g. ``[Resource::*]``)."""
    cdk.Validations.of(scope).acknowledge(
        *(cdk.Acknowledgment(id=rule, reason=reason) for rule, reason in reasons.items())
    )
