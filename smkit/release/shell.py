"""Running the commands of a release step: echoed on stderr, failures as :class:`ReleaseError`."""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path


class ReleaseError(RuntimeError):
    """A release step that cannot go on; the message says what failed and what to do."""


def echo(message: str) -> None:
    """Progress goes to stderr so that stdout carries only the result (an URI, an endpoint name)."""
    print(message, file=sys.stderr, flush=True)


def run(argv: Sequence[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None) -> None:
    """Run one command, echoing it first; raise :class:`ReleaseError` with its exit code on failure."""
    echo(f"+ {shlex.join(argv)}")
    try:
        result = subprocess.run(list(argv), cwd=cwd, env=dict(env) if env is not None else None, check=False)
    except FileNotFoundError:
        raise ReleaseError(f"{argv[0]}: command not found; install it or put it on PATH") from None
    if result.returncode != 0:
        raise ReleaseError(f"{shlex.join(argv)} failed with exit code {result.returncode}")


def run_all(commands: Sequence[Sequence[str]], *, dry_run: bool, cwd: Path | None = None) -> bool:
    """Run the commands in order (see :func:`run`), or with ``dry_run`` only print them; True if they ran."""
    if dry_run:
        for argv in commands:
            print(shlex.join(argv))
        return False
    for argv in commands:
        run(argv, cwd=cwd)
    return True
