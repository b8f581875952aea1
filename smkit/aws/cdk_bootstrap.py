"""The roles ``cdk bootstrap`` creates in an account and region, by name.

The lookup role (``cdk-QUALIFIER-lookup-role-ACCOUNT-REGION``) has ReadOnlyAccess and is trusted by the accounts
given to ``cdk bootstrap --trust`` (or ``--trust-for-lookup``): the role the CDK assumes for context lookups,
and the one the pipeline's synth step assumes to read what a stage runs (smkit.release.stage_state).
https://docs.aws.amazon.com/cdk/v2/guide/bootstrapping-env.html
"""

from __future__ import annotations

# The bootstrap's default qualifier (cdk bootstrap --qualifier changes it).
DEFAULT_QUALIFIER = "hnb659fds"


def partition_of(region: str) -> str:
    """The partition of ``region``: aws-cn for China, aws-us-gov for GovCloud, else aws."""
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def lookup_role_arn(account: str, region: str, *, qualifier: str = DEFAULT_QUALIFIER) -> str:
    """The bootstrap's lookup role of ``account`` / ``region``."""
    return f"arn:{partition_of(region)}:iam::{account}:role/cdk-{qualifier}-lookup-role-{account}-{region}"
