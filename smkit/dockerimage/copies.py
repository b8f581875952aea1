"""Every ``COPY``/``ADD`` source of a Dockerfile must be in its build context, or ``docker build`` fails.

Checked on the context as Docker will receive it (after the ignore file), e.g. the folder a CDK Docker
image asset staged, so a synth that succeeds means the image's files are there. Build arguments are
substituted as ``docker build --build-arg`` does: the given value, else the ``ARG`` default.
Dockerfile reference: https://docs.docker.com/reference/dockerfile/#copy
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

_VARIABLE = re.compile(r"\$(?:\{(\w+)(?::?[-+][^}]*)?\}|(\w+))")
_GLOB = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class Copy:
    """One source of a ``COPY``/``ADD`` instruction: the line it is on, the source path after substitution
    and the instruction's destination in the image."""

    line: int
    instruction: str
    source: str
    destination: str


def copy_sources(dockerfile_text: str, build_args: Mapping[str, str] | None = None) -> list[Copy]:
    """The context sources every ``COPY``/``ADD`` of the Dockerfile reads (not ``--from``, not URLs)."""
    args = dict(build_args or {})
    values: dict[str, str] = {}
    found: list[Copy] = []
    for number, keyword, rest in _instructions(dockerfile_text):
        if keyword == "FROM":
            values = {}  # ARGs are scoped to their build stage
        elif keyword == "ARG":
            for token in shlex.split(rest):
                name, _, default = token.partition("=")
                values[name] = args.get(name, _substitute(default, values))
        elif keyword == "ENV":
            for token in shlex.split(rest):
                name, eq, value = token.partition("=")
                if eq:
                    values[name] = _substitute(value, values)
        elif keyword in ("COPY", "ADD"):
            words = _arguments(rest)
            flags = [w for w in words if w.startswith("--")]
            paths = [w for w in words if not w.startswith("--")]
            if any(f.startswith("--from") for f in flags) or len(paths) < 2 or paths[0].startswith("<<"):
                continue
            destination = _substitute(paths[-1], values)
            for source in paths[:-1]:
                if re.match(r"^[a-z]+://|^git@", source):
                    continue
                found.append(Copy(number, keyword, _substitute(source, values), destination))
    return found


def missing_sources(
    context: Path, dockerfile: str, build_args: Mapping[str, str] | None = None
) -> list[Copy]:
    """The ``COPY``/``ADD`` sources of ``context/dockerfile`` that match nothing in ``context``."""
    text = (context / dockerfile).read_text(encoding="utf-8")
    missing = []
    for copy in copy_sources(text, build_args):
        relative = copy.source.lstrip("/")
        if relative in ("", "."):
            continue
        matched = any(context.glob(relative)) if _GLOB.search(relative) else (context / relative).exists()
        if not matched or ".." in Path(relative).parts:
            missing.append(copy)
    return missing


def _instructions(text: str) -> list[tuple[int, str, str]]:
    """(line number, KEYWORD, arguments) of each instruction, continuation lines joined."""
    out: list[tuple[int, str, str]] = []
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # comment lines inside a continued instruction are dropped
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        pending += line
        keyword, _, rest = pending.partition(" ")
        out.append((start, keyword.upper(), rest.strip()))
        pending = ""
    return out


def _arguments(rest: str) -> list[str]:
    """Flags and paths of a COPY/ADD, in shell form or JSON (exec) form."""
    match = re.match(r"^((?:--\S+\s+)*)(.*)$", rest, re.S)
    assert match is not None
    flags, paths = match.group(1).split(), match.group(2).strip()
    if paths.startswith("["):
        try:
            words = json.loads(paths)
        except json.JSONDecodeError:
            words = None
        if isinstance(words, list):
            return [*flags, *(str(w) for w in words)]
    return [*flags, *shlex.split(paths)]


def _substitute(text: str, values: Mapping[str, str]) -> str:
    return _VARIABLE.sub(lambda m: values.get(m.group(1) or m.group(2), ""), text)
