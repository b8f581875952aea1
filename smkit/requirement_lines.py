"""The lines of a pip requirements file, read by pip's own rules; one reader for every part of smkit.

pip joins a line that ends with a backslash to the next one, and a ``#`` starts a comment only at the start
of a line or after white space, so ``pkg @ https://host/pkg.whl#sha256=...`` keeps its hash fragment
(https://pip.pypa.io/en/stable/reference/requirements-file-format/#comments). Markers
(``pkg; python_version < "3.12"``) and options (``--index-url``) come through as written; what a caller
accepts is its own rule. The serving image, the packager and the config all read requirements files with
it, and decide with :func:`is_satisfied` whether installed distributions meet a requirement (names compared
as PEP 503 normalizes them, by ``packaging``, which the serving image carries too).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

# pip's COMMENT_RE (pip/_internal/req/req_file.py).
_COMMENT = re.compile(r"(^|\s+)#.*$")


class RequirementLine(NamedTuple):
    """One logical line: where it starts and its text (comment and surrounding white space removed)."""

    number: int
    text: str


def numbered_lines(text: str) -> list[RequirementLine]:
    """The non-empty logical lines of a requirements file's ``text``, with their first line numbers."""
    out: list[RequirementLine] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if not pending:
            start = number
        if _COMMENT.match(raw) and not pending:
            continue  # a whole-line comment, even one ending with a backslash
        if raw.endswith("\\"):
            pending.append(raw[:-1])
            continue
        line = _COMMENT.sub("", "".join([*pending, raw])).strip()
        pending = []
        if line:
            out.append(RequirementLine(start, line))
    if pending:
        line = _COMMENT.sub("", "".join(pending)).strip()
        if line:
            out.append(RequirementLine(start, line))
    return out


def requirement_lines(text: str) -> list[str]:
    """The non-empty logical lines of a requirements file's ``text``."""
    return [line.text for line in numbered_lines(text)]


def file_lines(path: str | Path) -> list[str]:
    """:func:`requirement_lines` of the file at ``path`` (UTF-8; OSError and UnicodeDecodeError propagate)."""
    return requirement_lines(Path(path).read_text(encoding="utf-8"))


# Where SageMaker puts the model data; a requirement line may name a file there by its absolute path, as
# JumpStart's scripts name the wheels they ship (/opt/ml/model/code/lib/<name>/<wheel>), which pip installs
# once the model sits there (https://docs.aws.amazon.com/sagemaker/latest/dg/your-algorithms-inference-code.html).
MODEL_DIR_PREFIX = "/opt/ml/model/"


def localized_text(text: str, model_dir: str | Path) -> str | None:
    """``text`` with every line that names a file under ``/opt/ml/model/`` rewritten to the same file under
    ``model_dir`` (the model folder as it sits here), or None when no line needs it (or ``model_dir`` is
    ``/opt/ml/model`` itself)."""
    root = Path(model_dir).absolute()
    if str(root) == MODEL_DIR_PREFIX.rstrip("/"):
        return None
    changed = False
    out: list[str] = []
    for line in requirement_lines(text):
        if line.startswith(MODEL_DIR_PREFIX):
            line = str(root / line[len(MODEL_DIR_PREFIX) :])
            changed = True
        out.append(line)
    return "\n".join(out) + "\n" if changed else None


def installed_versions(distributions: Iterable[tuple[str, str | None]]) -> dict[str, str | None]:
    """``{canonical name: version}`` of ``(name, version)`` pairs; the first of two spellings of a name wins
    (as the first distribution on ``sys.path`` is the one imported)."""
    versions: dict[str, str | None] = {}
    for name, version in distributions:
        versions.setdefault(canonicalize_name(name), version)
    return versions


def is_satisfied(requirement: Requirement, installed: Mapping[str, str | None]) -> bool:
    """Whether ``installed`` (:func:`installed_versions`: canonical name -> version, None for not installed)
    meets ``requirement``.

    A requirement whose marker does not apply to this interpreter is met; a direct URL never is (only pip
    can tell what it points at); otherwise the installed version must match the specifier, pre-releases
    included.
    """
    if requirement.marker is not None and not requirement.marker.evaluate():
        return True
    if requirement.url:
        return False
    version = installed.get(canonicalize_name(requirement.name))
    return version is not None and requirement.specifier.contains(version, prereleases=True)
