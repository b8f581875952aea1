"""Vendor a model's requirements as wheels into ``code/wheels`` for endpoints without network access.

With ``EnableNetworkIsolation`` the container has no route to a package index, so ``code/requirements.txt``
can only be installed from files inside the archive
(https://docs.aws.amazon.com/sagemaker/latest/dg/mkt-algo-model-internet-free.html). The wheels are those
pip resolves for the *image's* platform, not this machine's: manylinux x86_64 and the image's Python
(``pip download --only-binary=:all: --platform ... --python-version ...``), with the user's own pip
configuration (index, find-links, constraints). A requirement that has no such wheel (source-only
packages, local paths) is refused here, naming its line, instead of failing at container start.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from smkit.digest import sha256_file
from smkit.packaging.errors import PackagingError
from smkit.packaging.requirements import parse_requirements

# glibc of the kit's image (python:3.11-slim-bookworm, Debian 12) is 2.36; manylinux_2_17 is manylinux2014.
MANYLINUX_GLIBC_MINORS = range(36, 16, -1)
WHEELS_DIR = "wheels"
COMPLETE = ".complete"


@dataclass(frozen=True)
class VendorTarget:
    """The platform the wheels are for: the image's Python (``"3.11"``) on manylinux x86_64."""

    python: str = "3.11"
    machine: str = "x86_64"
    # (canonical name, version) of what the image installs: wheels of exactly these are not vendored.
    provided: tuple[tuple[str, str], ...] = ()

    @property
    def platforms(self) -> list[str]:
        """pip ``--platform`` values, newest glibc first (pip does not expand manylinux_X_Y by itself)."""
        tags = [f"manylinux_2_{minor}_{self.machine}" for minor in MANYLINUX_GLIBC_MINORS]
        return [*tags, f"manylinux2014_{self.machine}"]

    def describe(self) -> str:
        """``manylinux x86_64, Python 3.11``."""
        return f"manylinux {self.machine}, Python {self.python}"


def download_command(target: VendorTarget, dest: Path, requirements: list[str]) -> list[str]:
    """The ``pip download`` call for ``requirements`` (files with ``-r``, or requirement strings)."""
    command = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-input"]
    command += ["--only-binary=:all:", "--implementation", "cp", "--python-version", target.python]
    for platform in target.platforms:
        command += ["--platform", platform]
    return [*command, "--dest", str(dest), *requirements]


def _pip(command: list[str], *, progress: bool) -> tuple[int, str]:
    """Run pip (its output copied to stderr when ``progress``); return the exit code and its output."""
    lines: list[str] = []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            if progress:
                sys.stderr.write(line)
                sys.stderr.flush()
            lines.append(line)
    return proc.returncode, "".join(lines)


def _reason(stderr: str) -> str:
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    return (errors[0] if errors else (lines[-1] if lines else "pip failed")).removeprefix("ERROR: ")


def _failing_line(
    requirements_file: Path, target: VendorTarget, scratch: Path
) -> tuple[int, str, str] | None:
    """The first line of the file that cannot be downloaded on its own: (number, line, pip's reason)."""
    text = requirements_file.read_text(encoding="utf-8")
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        code, output = _pip(download_command(target, scratch, [line]), progress=False)
        if code != 0:
            return number, line, _reason(output)
    return None


def _cache_dir(cache: Path, requirements_file: Path, target: VendorTarget) -> Path:
    digest = hashlib.sha256(requirements_file.read_bytes())
    digest.update(f"\0{target.python}\0{target.machine}".encode())
    return cache / "wheels" / digest.hexdigest()[:16]


def vendor_wheels(
    code_dir: Path, dest: Path, *, target: VendorTarget, cache: Path, progress: bool = True
) -> list[str]:
    """Put the wheels of ``code_dir/requirements.txt`` (with their dependencies) into ``dest``.

    Downloads are cached per requirements content and platform under ``cache/wheels``, with the sha256 of
    each wheel recorded; a cached wheel that no longer matches its record is never copied: the download is
    made again. Returns the wheel file names; raises :class:`PackagingError` naming the first line that
    has no wheel for the platform.
    """
    requirements_file = code_dir / "requirements.txt"
    lines = parse_requirements(requirements_file, label=str(requirements_file))
    dest.mkdir(parents=True, exist_ok=True)
    if not lines:
        return []
    cached = _cache_dir(cache, requirements_file, target)
    damage = cache_damage(cached)
    if damage is not None and (cached / COMPLETE).is_file():
        print(f"smkit: downloading the wheels again: {damage}", file=sys.stderr, flush=True)
    if damage is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=cached.name + ".", dir=cached.parent))
        try:
            if progress:
                print(
                    f"smkit: vendoring the wheels of {requirements_file} for {target.describe()} into code/wheels",
                    file=sys.stderr,
                    flush=True,
                )
            code, output = _pip(
                download_command(target, staging, ["-r", str(requirements_file)]), progress=progress
            )
            if code != 0:
                raise _refusal(requirements_file, target, output, staging)
            digests = {p.name: sha256_file(p) for p in sorted(staging.glob("*.whl"))}
            (staging / COMPLETE).write_text(json.dumps(digests, indent=2) + "\n", encoding="utf-8")
            shutil.rmtree(cached, ignore_errors=True)
            os.rename(staging, cached)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    names = sorted(p.name for p in cached.glob("*.whl"))
    provided = set(target.provided)
    kept = [name for name in names if wheel_identity(name) not in provided]
    skipped = [name for name in names if name not in kept]
    if skipped and progress:
        print(
            f"smkit: not vendoring {', '.join(skipped)}: the image installs exactly these versions",
            file=sys.stderr,
            flush=True,
        )
    for name in kept:
        shutil.copy2(cached / name, dest / name)
    return kept


def cache_damage(cached: Path) -> str | None:
    """Why the cached download ``cached`` cannot be used (None: complete, every wheel as recorded)."""
    marker = cached / COMPLETE
    if not marker.is_file():
        return f"{cached} is not a complete download"
    try:
        recorded = json.loads(marker.read_text(encoding="utf-8") or "null")
    except (OSError, ValueError):
        recorded = None
    if not isinstance(recorded, dict):
        return f"{marker} records no sha256 of the wheels (an older smkit wrote it)"
    present = {p.name for p in cached.glob("*.whl")}
    if present != set(recorded):
        return f"{cached} holds {sorted(present ^ set(recorded))} that its record does not (or the reverse)"
    for name, expected in recorded.items():
        if sha256_file(cached / name) != expected:
            return f"{cached / name} does not match the sha256 recorded when it was downloaded (damaged)"
    return None


def wheel_identity(filename: str) -> tuple[str, str]:
    """(canonical name, version) of a wheel file name (``numpy-2.4.6-cp311-...whl``)."""
    name, version = filename.split("-")[:2]
    return canonicalize_name(name), version


def pinned_versions(lines: list[str]) -> tuple[tuple[str, str], ...]:
    """(canonical name, version) of each ``name==version`` line (what the image installs, pinned)."""
    found = []
    for line in lines:
        match = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*==\s*([^\s;,]+)\s*", line)
        if match:
            found.append((canonicalize_name(match.group(1)), match.group(2)))
    return tuple(found)


def _refusal(requirements_file: Path, target: VendorTarget, stderr: str, scratch: Path) -> PackagingError:
    found = _failing_line(requirements_file, target, scratch / "probe")
    if found is None:
        return PackagingError(
            str(requirements_file),
            f"its wheels for {target.describe()} could not be downloaded together: {_reason(stderr)}",
            "make the lines compatible with each other (pip install -r shows the conflict)",
        )
    number, line, reason = found
    name = re.split(r"[<>=!~;\[ @]", line, maxsplit=1)[0]
    return PackagingError(
        f"{requirements_file} line {number}",
        f"{line!r} has no wheel for {target.describe()} ({reason}), and the endpoint has network isolation "
        "on, so it could not be installed at container start",
        f"pin a version of {name} that publishes a manylinux x86_64 wheel for Python {target.python}, "
        "or install it into the image instead (the config's image.requirements file, or "
        "container/requirements-extra.txt for every model), or turn model.network_isolation off",
    )
