"""cdk-nag rule packs every synthesized app is checked against (docs/toolchain.md).

cdk-nag 3 runs as CDK policy-validation plugins: any unacknowledged finding fails ``cdk synth``.
Acknowledgements sit next to the resources they are about (``smkit.cdk.constructs.*``), each with a reason.
"""

from __future__ import annotations

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks, HIPAASecurityChecks, NIST80053R5Checks
from constructs import Construct

PACKS = (AwsSolutionsChecks, HIPAASecurityChecks, NIST80053R5Checks)


def add_compliance_checks(scope: Construct) -> None:
    """Register the AwsSolutions, HIPAA Security and NIST 800-53 R5 packs on ``scope`` (an App or Stage)."""
    cdk.Validations.of(scope).add_plugins(*(pack(scope) for pack in PACKS))
