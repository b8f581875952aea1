"""Keep a resource's CloudFormation logical id when its construct moves (a changed id is a replacement).

CDK derives a logical id from the construct path below the stack: the path's components without
``Resource``, then the first 8 hex digits (upper case) of the MD5 of the whole path.
https://docs.aws.amazon.com/cdk/v2/guide/identifiers.html#identifiers_logical_ids
"""

from __future__ import annotations

import hashlib

import aws_cdk as cdk
from constructs import IConstruct


def legacy_logical_id(*components: str) -> str:
    """The logical id CDK gives a resource at ``components`` (path below the stack)."""
    digest = hashlib.md5("/".join(components).encode(), usedforsecurity=False).hexdigest()[:8].upper()
    return "".join(c for c in components if c != "Resource") + digest


def pin(construct: IConstruct, *components: str) -> None:
    """Give ``construct``'s CloudFormation resource the logical id it had at ``components``."""
    resource = construct.node.default_child
    assert isinstance(resource, cdk.CfnElement)
    resource.override_logical_id(legacy_logical_id(*components))


def pascal(text: str) -> str:
    """``tabular-realtime`` -> ``TabularRealtime`` (construct ids are PascalCase)."""
    return "".join(part[:1].upper() + part[1:] for part in text.replace("_", "-").split("-") if part)
