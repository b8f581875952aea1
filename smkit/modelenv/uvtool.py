"""uv, the installer that builds model environments: where its binary is, and one way to run it.

uv (https://docs.astral.sh/uv/) ships as a wheel with its binary inside and is a dependency of smkit, so
``pip install smkit`` brings it. It resolves once (``uv pip compile``), installs from its own cache by
linking files instead of copying them, and compiles no bytecode for a model's own packages, which is why a
model environment is seconds, not minutes (the image layer's are compiled once, as the image's pip install
compiles them: :mod:`smkit.modelenv.builder`).

uv reads its own configuration (``UV_INDEX_URL``, ``uv.toml``, ...;
https://docs.astral.sh/uv/reference/environment/), not pip's. So that a private index, a CPU-only torch
wheel folder or a constraints file in your pip configuration counts as it did when pip built these
environments, pip's own settings (``pip config list``: its files and ``PIP_*`` variables, the variables
winning) for ``index-url``, ``extra-index-url``, ``find-links`` and ``constraint`` are passed to uv as its
options, with pip's rule of taking the best version across all indexes (``--index-strategy
unsafe-best-match``). A setting you gave uv itself (``UV_INDEX_URL``, ...) is left to uv.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys

from smkit.modelenv.image_runtime import ModelEnvError

UV_VAR = "SMKIT_UV"
# pip's setting -> (uv's variable that overrides it, uv's option); values are space-separated lists.
_PIP_TO_UV = {
    "index-url": ("UV_INDEX_URL", "--index-url"),
    "extra-index-url": ("UV_EXTRA_INDEX_URL", "--extra-index-url"),
    "find-links": ("UV_FIND_LINKS", "--find-links"),
    "constraint": ("UV_CONSTRAINT", "--constraint"),
}
# Which section of pip's configuration wins (https://pip.pypa.io/en/stable/topics/configuration/).
_RANK = {"global": 0, "install": 1, ":env:": 2}


def uv_binary() -> str:
    """The uv executable: ``$SMKIT_UV``, else the one the ``uv`` wheel installed, else ``uv`` on PATH."""
    if os.environ.get(UV_VAR) not in (None, "", "none"):  # "none" is for the serving runtime only
        return os.environ[UV_VAR]
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found is None:
            raise ModelEnvError(
                "uv is not installed (smkit builds model environments with it); install it with "
                "`pip install uv`, or set SMKIT_UV to its path"
            ) from None
        return found


@functools.cache
def pip_settings() -> dict[str, str]:
    """pip's effective settings of :data:`_PIP_TO_UV` (``pip config list``; empty when pip cannot say)."""
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False
        )
    except OSError:
        return {}
    found: dict[str, tuple[int, str]] = {}
    for line in proc.stdout.splitlines():
        key, sep, value = line.partition("=")
        section, _, name = key.rpartition(".")
        if sep and name in _PIP_TO_UV and section in _RANK:
            rank = _RANK[section]
            if name not in found or rank >= found[name][0]:
                found[name] = (rank, value.strip().strip("'\""))
    return {name: value for name, (_, value) in found.items()}


def index_options(environ: dict[str, str] | None = None, settings: dict[str, str] | None = None) -> list[str]:
    """uv options for pip's index, find-links and constraint settings (see the module docstring)."""
    environ = dict(os.environ) if environ is None else environ
    settings = pip_settings() if settings is None else settings
    options: list[str] = []
    for name, value in settings.items():
        uv_var, option = _PIP_TO_UV[name]
        if environ.get(uv_var):
            continue
        for item in value.split():
            local = item.removeprefix("file://")
            if local.startswith("/") and not os.path.exists(local):
                continue  # pip skips a location that does not exist; uv would stop
            options += [option, item]
    if any(o in options for o in ("--index-url", "--extra-index-url", "--find-links")):
        options += ["--index-strategy", "unsafe-best-match"]
    return options


def run_uv(args: list[str], what: str, *, progress: bool, offline: bool = False) -> str:
    """Run ``uv ARGS``; return its standard output. Raises :class:`ModelEnvError` naming ``what``.

    ``offline``: no index, no network and no configuration of the user's (the endpoint has none either).
    """
    environ = dict(os.environ)
    if offline:
        environ = {k: v for k, v in environ.items() if not k.startswith(("UV_", "PIP_"))}
        environ["UV_NO_CONFIG"] = "1"
        environ["UV_OFFLINE"] = "1"
    command = [uv_binary(), *args]
    proc = subprocess.run(command, capture_output=True, text=True, env=environ, check=False)
    if progress and proc.stderr.strip():
        sys.stderr.write(proc.stderr)
        sys.stderr.flush()
    if proc.returncode != 0:
        lines = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
        raise ModelEnvError(f"{what} failed (uv exit {proc.returncode}): {' | '.join(lines[-6:])}")
    return proc.stdout
