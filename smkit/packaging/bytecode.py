"""Bytecode of the vendored modules a model imports, built when it is packaged, so a first load compiles none.

A container installs ``code/wheels`` from source files only: uv and pypa's installer write no bytecode, and the
kit's image sets ``PYTHONDONTWRITEBYTECODE``, so every worker that loads the model compiles each module the
handler imports, on every start. For scikit-learn + pandas + scipy that is about 1.5 s of CPU of a
multi-model first load, which SageMaker cuts off at 60 s (BENCHMARKS.md, model environments). Compiling
every module of the wheels at install instead costs more than it saves (18 s on two cores for the same
three).

``smkit package`` knows which modules a load needs: its handler check imported the handler and ran
``model_fn`` in the model's environment. Each of those modules that a vendored wheel holds is compiled from
the wheel's own bytes into a *checked-hash* ``.pyc`` (PEP 552, https://peps.python.org/pep-0552/) and stored
in ``code/wheels/bytecode.<cache tag>.zip`` (``bytecode.cpython-311.zip``) under the path it has in an
install folder (``sklearn/__pycache__/base.cpython-311.pyc``). The runtime extracts them next to the
installed sources (:func:`smkit.hosting.requirements.add_bytecode`). At import Python compares the source
hash each file records with the installed source and compiles the source instead when they differ, so a
file can only be used for the very source it was compiled from; an interpreter of another version ignores
them (its cache tag differs).

The file is reproducible: compiled in a fresh interpreter with ``PYTHONHASHSEED=0`` (set and frozenset
constants are marshalled in hash order), in a sorted order, into a zip with fixed timestamps and modes.
Results are cached by the wheels' sha256, the module names and the interpreter's version.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from smkit.digest import sha256_file

BYTECODE_PREFIX = "bytecode."  # code/wheels/bytecode.<cache tag>.zip
BYTECODE_SUFFIX = ".zip"

# Run by the interpreter that checked the handler (the model's environment: the image's Python), standard
# library only. argv: REQUEST.json with {"wheels": [...], "modules": [...], "out": path}; prints the cache
# tag and the number of files written. py_compile is the standard library's writer of hash-based .pyc files.
COMPILE_SOURCE = r"""
import json, os, py_compile, sys, tempfile, zipfile

request = json.load(open(sys.argv[1], encoding="utf-8"))
wanted = set(request["modules"])
tag = sys.implementation.cache_tag
compiled = {}
with tempfile.TemporaryDirectory() as scratch:
    source_file = os.path.join(scratch, "source.py")
    pyc_file = os.path.join(scratch, "source.pyc")
    for wheel in request["wheels"]:
        with zipfile.ZipFile(wheel) as archive:
            for name in sorted(archive.namelist()):
                parts = name.split("/")
                if not name.endswith(".py") or parts[0].endswith((".data", ".dist-info")):
                    continue
                module = parts[:-1] + ([] if parts[-1] == "__init__.py" else [parts[-1][:-3]])
                if not all(p.isidentifier() for p in module) or ".".join(module) not in wanted:
                    continue
                with open(source_file, "wb") as f:
                    f.write(archive.read(name))
                done = py_compile.compile(
                    source_file,
                    cfile=pyc_file,
                    dfile=name,
                    optimize=0,
                    invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
                    quiet=2,
                )
                if done is None:
                    continue  # it does not compile here: the import compiles (and reports) it
                folder = "/".join(parts[:-1] + ["__pycache__"])
                with open(pyc_file, "rb") as f:
                    compiled[f"{folder}/{parts[-1][:-3]}.{tag}.pyc"] = f.read()
with zipfile.ZipFile(request["out"], "w", zipfile.ZIP_STORED) as out:
    for path in sorted(compiled):
        info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = 0o644 << 16
        info.create_system = 3
        out.writestr(info, compiled[path])
print(json.dumps({"tag": tag, "count": len(compiled)}))
"""


def _digest(wheels: Sequence[Path], modules: Sequence[str], python_version: str) -> str:
    digest = hashlib.sha256(f"{python_version}\0".encode())
    for wheel in wheels:
        digest.update(f"{wheel.name}\0{sha256_file(wheel)}\0".encode())
    digest.update("\0".join(sorted(modules)).encode())
    return digest.hexdigest()[:24]


def write_bytecode(
    wheels_dir: Path, modules: Sequence[str], *, python: str, python_version: str, cache: Path
) -> Path | None:
    """Compile the ``modules`` that the wheels in ``wheels_dir`` hold, into ``wheels_dir/bytecode.<tag>.zip``.

    ``python`` is the interpreter of the image's version that ran the handler check (``python_version``
    its full version, part of the cache key). Returns the file written; None when no vendored module was
    imported. Compiling is an optimisation: when it fails, the archive ships without bytecode and says so
    on stderr.
    """
    wheels = sorted(wheels_dir.glob("*.whl"))
    if not wheels or not modules:
        return None
    key = _digest(wheels, modules, python_version)
    folder = cache / "bytecode"
    folder.mkdir(parents=True, exist_ok=True)
    cached = folder / f"{key}{BYTECODE_SUFFIX}"
    record = folder / f"{key}.json"
    found = _cached(cached, record)
    if found is None:
        found = _compile(wheels, modules, python, cached, record)
    if found is None or not found["count"]:
        return None
    target = wheels_dir / f"{BYTECODE_PREFIX}{found['tag']}{BYTECODE_SUFFIX}"
    shutil.copyfile(cached, target)
    return target


def _cached(cached: Path, record: Path) -> dict[str, Any] | None:
    """The record of a cached compile whose zip still has the sha256 recorded (else None: compile again)."""
    if not record.is_file():
        return None
    try:
        found = json.loads(record.read_text(encoding="utf-8"))
        if isinstance(found, dict) and found.get("sha256") == sha256_file(cached):
            return found
    except (OSError, ValueError):
        pass
    print(f"smkit: compiling the vendored modules' bytecode again ({cached} is damaged)", file=sys.stderr)
    return None


def _compile(
    wheels: Sequence[Path], modules: Sequence[str], python: str, cached: Path, record: Path
) -> dict[str, Any] | None:
    with tempfile.TemporaryDirectory(prefix="smkit-bytecode-", dir=cached.parent) as tmp:
        request = Path(tmp) / "request.json"
        out = Path(tmp) / "bytecode.zip"
        request.write_text(
            json.dumps({"wheels": [str(w) for w in wheels], "modules": sorted(modules), "out": str(out)}),
            encoding="utf-8",
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env["PYTHONHASHSEED"] = "0"
        done = subprocess.run(
            [python, "-I", "-B", "-c", COMPILE_SOURCE, str(request)],
            capture_output=True,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        if done.returncode != 0:
            tail = " | ".join(done.stderr.strip().splitlines()[-3:])
            print(f"smkit: no bytecode for the vendored wheels ({python}: {tail})", file=sys.stderr)
            return None
        found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        found["sha256"] = sha256_file(out)
        record.unlink(missing_ok=True)
        os.replace(out, cached)
        record.write_text(json.dumps(found) + "\n", encoding="utf-8")
    return found
