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


def plain(documentation: str) -> str:
    """A member's documentation as the reader sees it: no tags, entities decoded, one space between words."""
    import html
    import re

    text = html.unescape(re.sub(r"<[^>]+>", " ", documentation))
    text = " ".join(text.split())
    return re.sub(r" ([.,;:)])", r"\1", text)


# Words that make a sentence of a member's documentation a constraint: what must, cannot or may only be, and
# the bounds it states.
CONSTRAINT_WORDS = (
    r"\b(must|must not|cannot|can't|can not|only|between|at most|at least|up to|no more than|no longer than|"
    r"maximum|minimum|exceed|exceeds|required|not supported|isn't supported|is not supported|valid values?)\b"
)


def constraint_sentences(documentation: str) -> list[str]:
    """The sentences of ``documentation`` (:func:`plain`) that state a constraint (:data:`CONSTRAINT_WORDS`),
    each whole, as a row would quote it."""
    import re

    text = plain(documentation)
    sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z\"(])", text)
    pattern = re.compile(CONSTRAINT_WORDS, re.IGNORECASE)
    return [s for s in sentences if s.endswith(".") and pattern.search(s)]
