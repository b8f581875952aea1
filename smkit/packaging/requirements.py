"""Validation of ``code/requirements.txt`` as pip requirement lines (PEP 508).

Framework images pip-install this file at container start and stop serving if that fails
(docs/handler-semantics.md), so a bad line is caught here instead of at deploy time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from smkit.packaging.errors import PackagingError
from smkit.requirement_lines import installed_versions, is_satisfied, numbered_lines

EXAMPLE = "numpy==2.4.6"


@dataclass(frozen=True)
class Unsatisfied:
    """A requirement the checking interpreter does not satisfy (it is installed at container start)."""

    requirement: str
    installed: str | None

    def __str__(self) -> str:
        have = f"installed {self.installed}" if self.installed else "not installed"
        return f"{self.requirement} ({have})"


def parse_requirements(path: Path, *, label: str) -> list[Requirement]:
    """Parse ``path`` line by line (pip's rules: :mod:`smkit.requirement_lines`); blank lines and ``#``
    comments are allowed, options are not."""
    if not path.is_file():
        raise PackagingError(
            label, "missing", "create it listing the packages inference.py imports (it may be empty)"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise PackagingError(label, f"not UTF-8 text ({exc.reason})", "save it as UTF-8") from exc
    parsed: list[Requirement] = []
    for number, line in numbered_lines(text):
        where = f"{label} line {number}"
        if line.startswith("-"):
            raise PackagingError(
                where,
                f"pip option {line!r} is not supported in model requirements",
                f"list packages as PEP 508 lines such as {EXAMPLE!r}; put index settings in the image",
            )
        try:
            parsed.append(Requirement(line))
        except InvalidRequirement as exc:
            raise PackagingError(
                where,
                f"{line!r} is not a valid requirement ({exc})",
                f"write one PEP 508 requirement per line, e.g. {EXAMPLE!r}",
            ) from exc
    return parsed


def unsatisfied(requirements: list[Requirement], installed: dict[str, str | None]) -> list[Unsatisfied]:
    """Requirements whose markers apply here and whose installed version (by name, however spelt) does not
    match (:func:`smkit.requirement_lines.is_satisfied`)."""
    versions = installed_versions(installed.items())
    return [
        Unsatisfied(str(req), versions.get(canonicalize_name(req.name)))
        for req in requirements
        if not is_satisfied(req, versions)
    ]
