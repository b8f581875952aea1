"""Validation of ``code/requirements.txt`` as pip requirement lines (PEP 508).

Framework images pip-install this file at container start and stop serving if that fails
(docs/handler-semantics.md), so a bad line is caught here instead of at deploy time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)

from smkit.packaging.errors import PackagingError
from smkit.requirement_lines import MODEL_DIR_PREFIX, installed_versions, is_satisfied, numbered_lines

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
        if line.startswith(MODEL_DIR_PREFIX):
            parsed.append(_model_file(line, path.parent, where))
            continue
        try:
            parsed.append(Requirement(line))
        except InvalidRequirement as exc:
            raise PackagingError(
                where,
                f"{line!r} is not a valid requirement ({exc})",
                f"write one PEP 508 requirement per line, e.g. {EXAMPLE!r}",
            ) from exc
    return parsed


def _model_file(line: str, code_dir: Path, where: str) -> Requirement:
    """A line naming a wheel or sdist by where SageMaker extracts the model (``/opt/ml/model/code/lib/x.whl``):
    ``name @ file:///opt/ml/model/...``; a file under ``code/`` must be in the code folder."""
    file_name = line.rsplit("/", 1)[-1]
    try:
        if file_name.endswith(".whl"):
            name = str(parse_wheel_filename(file_name)[0])
        else:
            name = str(parse_sdist_filename(file_name)[0])
    except (InvalidWheelFilename, InvalidSdistFilename):
        raise PackagingError(
            where,
            f"{line!r} names no wheel or source distribution file",
            "name a .whl (or .tar.gz) file by its path under /opt/ml/model, or write a PEP 508 requirement",
        ) from None
    code_prefix = f"{MODEL_DIR_PREFIX}code/"
    if line.startswith(code_prefix) and not (code_dir / line[len(code_prefix) :]).is_file():
        raise PackagingError(
            where,
            f"{line!r} names code/{line[len(code_prefix) :]}, which is not in the code folder {code_dir}",
            "put the file there (SageMaker extracts the model to /opt/ml/model), or fix the path",
        )
    return Requirement(f"{name} @ file://{line}")


def unsatisfied(requirements: list[Requirement], installed: dict[str, str | None]) -> list[Unsatisfied]:
    """Requirements whose markers apply here and whose installed version (by name, however spelt) does not
    match (:func:`smkit.requirement_lines.is_satisfied`)."""
    versions = installed_versions(installed.items())
    return [
        Unsatisfied(str(req), versions.get(canonicalize_name(req.name)))
        for req in requirements
        if not is_satisfied(req, versions)
    ]
