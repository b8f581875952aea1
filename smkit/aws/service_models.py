"""AWS's API models as botocore ships them: the machine-readable source of enums, ranges and patterns.

botocore (a dependency of the kit) carries every service's model: each member's documentation, its
``min``/``max``, ``pattern`` and ``enum``. Facts that AWS publishes there are read from here, never copied.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any


@functools.cache
def service_model(service: str) -> Any:
    """botocore's ``ServiceModel`` of ``service`` (e.g. ``sagemaker``, ``application-autoscaling``)."""
    import botocore.session

    return botocore.session.get_session().get_service_model(service)


def shape(service: str, name: str) -> Any:
    """The shape ``name`` of ``service``'s model."""
    return service_model(service).shape_for(name)


@dataclass(frozen=True)
class Constraint:
    """What an API model says of one member: its range (``min``/``max``: a number's value, a string's or
    list's length), ``pattern``, ``enum`` and documentation."""

    service: str
    shape: str
    member: str
    min: int | float | None
    max: int | float | None
    pattern: str | None
    enum: tuple[str, ...]
    documentation: str


def member(service: str, structure: str, name: str) -> Constraint:
    """The constraints of ``structure.name`` in ``service``'s model (botocore's metadata of the member's
    shape)."""
    parent = shape(service, structure)
    target = parent.members[name]
    meta = target.metadata
    return Constraint(
        service=service,
        shape=structure,
        member=name,
        min=meta.get("min"),
        max=meta.get("max"),
        pattern=meta.get("pattern"),
        enum=tuple(getattr(target, "enum", None) or ()),
        documentation=target.documentation or "",
    )
