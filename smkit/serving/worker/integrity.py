"""The model directory checked before its code is imported and ``model_fn`` runs.

Two checks, both on by default (``SMKIT_VERIFY_MODEL_FILES=false`` turns them off, docs/security.md):

1. Integrity: when the model carries ``smkit-manifest.json`` (every archive ``smkit package`` builds,
   smkit/packaging/manifest.py), every file it lists must be there with the size and sha256 it had when it
   was packaged. A changed or missing file is refused by name.
2. Pickle imports: every file that may hold a pickle (smkit/pickle_scan.py), listed or not, is read without
   loading it, and each global it would import must match the framework tables (smkit/pickle_allow.py),
   the manifest's ``pickle_allow`` entries (``security.artifacts.allow_globals`` at packaging) or
   ``SMKIT_PICKLE_ALLOW`` (comma-separated entries, for models packaged by other tools).

It runs in the worker (the model's interpreter, standard library only), so a failure is a failed model load:
``/ping`` reports it and the log names the file.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path

from smkit.contract import read_flag
from smkit.digest import sha256_file
from smkit.pickle_allow import Allow, entry_problem, known_as
from smkit.pickle_scan import ScanError, is_candidate, scan_file

VAR_VERIFY = "SMKIT_VERIFY_MODEL_FILES"
VAR_PICKLE_ALLOW = "SMKIT_PICKLE_ALLOW"
MANIFEST_NAME = "smkit-manifest.json"  # smkit/packaging/tree.py writes it
MAX_MANIFEST_BYTES = 64 << 20
SKIPPED_DIRS = frozenset({"__pycache__"})  # written by importing code/ in an earlier worker

log = logging.getLogger("smkit.serving.worker.integrity")


class ModelFileError(Exception):
    """A model file changed since packaging, is missing, or would import a global the allowlist refuses."""


def verify_model_dir(model_dir: str, environ: Mapping[str, str] | None = None) -> None:
    """Check ``model_dir`` as the module docstring says; raise :class:`ModelFileError` naming the file."""
    env = os.environ if environ is None else environ
    if not read_flag(env, VAR_VERIFY, True):
        log.warning("%s=%s: model files are not checked before they load", VAR_VERIFY, env.get(VAR_VERIFY))
        return
    root = Path(model_dir)
    manifest = _manifest(root)
    listed: dict[str, tuple[int, str]] = {}
    allow_entries: list[str] = []
    if manifest is not None:
        listed, allow_entries = manifest
        for name, (size, digest) in sorted(listed.items()):
            _check_file(root, name, size, digest)
    allow_entries.extend(e.strip() for e in env.get(VAR_PICKLE_ALLOW, "").split(",") if e.strip())
    for entry in allow_entries:
        problem = entry_problem(entry)
        if problem is not None:
            raise ModelFileError(f"pickle allow entry {entry!r} {problem}")
    allow = Allow.of(allow_entries)
    for path in _files(root):
        _check_pickle(path, allow)


def _manifest(root: Path) -> tuple[dict[str, tuple[int, str]], list[str]] | None:
    path = root / MANIFEST_NAME
    if not path.is_file():
        log.info("%s has no %s: files are not checked against packaging hashes", root, MANIFEST_NAME)
        return None
    try:
        if path.stat().st_size > MAX_MANIFEST_BYTES:
            raise ValueError(f"larger than {MAX_MANIFEST_BYTES} bytes")
        data = json.loads(path.read_bytes().decode("utf-8"))
        files = {str(f["path"]): (int(f["size"]), str(f["sha256"])) for f in data["files"]}
        allow = [str(a) for a in data.get("pickle_allow") or ()]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ModelFileError(
            f"{path}: not a readable manifest ({exc}); rebuild the archive with smkit package, or set "
            f"{VAR_VERIFY}=false to serve it unchecked"
        ) from None
    return files, allow


def _check_file(root: Path, name: str, size: int, digest: str) -> None:
    path = root / name
    if ".." in Path(name).parts or Path(name).is_absolute():
        raise ModelFileError(f"{root / MANIFEST_NAME}: lists {name!r}, which is outside the model directory")
    if not path.is_file():
        raise ModelFileError(f"{path}: listed in {MANIFEST_NAME} but missing; package the model again")
    actual_size = path.stat().st_size
    actual = sha256_file(path) if actual_size == size else None
    if actual != digest:
        what = f"size {actual_size:,} bytes, packaged {size:,}" if actual is None else f"sha256 {actual}"
        raise ModelFileError(
            f"{path}: changed since it was packaged ({what}; {MANIFEST_NAME} says sha256 {digest}); "
            f"package the model again with smkit package, or set {VAR_VERIFY}=false to serve it unchecked"
        )


def _files(root: Path) -> list[Path]:
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
        found.extend(Path(dirpath) / name for name in sorted(filenames) if name != MANIFEST_NAME)
    return [p for p in found if p.is_file() and not p.is_symlink()]


def _check_pickle(path: Path, allow: Allow) -> None:
    with path.open("rb") as f:
        head = f.read(8)
    if not is_candidate(path, head):
        return
    try:
        findings = scan_file(path)
    except ScanError as exc:
        raise ModelFileError(
            f"{path}: may hold a pickle but cannot be read to the end without loading it ({exc}); save the "
            "model as safetensors, ONNX or the framework's native format, or set "
            f"{VAR_VERIFY}=false to serve it unchecked"
        ) from None
    refused = sorted({g for f in findings for g in f.globals if not allow.matches(g)}, key=str)
    if refused:
        names = ", ".join(known_as(g) for g in refused)
        exact = ", ".join(str(g) for g in refused)
        raise ModelFileError(
            f"{path}: its pickle imports {names}, which no allow entry covers, so it is not loaded; save the "
            "model as safetensors, ONNX or the framework's native format, or, only if you trust the file, "
            f"allow {exact} (security.artifacts.allow_globals when packaging, {VAR_PICKLE_ALLOW} here)"
        )
