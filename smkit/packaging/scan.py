"""Refuse a model file whose pickle would import anything the allowlist does not name.

Every file of the archive that may hold a pickle (pickle, joblib, torch's zip of pickles, object ``.npy``;
:mod:`smkit.pickle_scan`) is read without loading it, and every global it would import must match an entry of
:mod:`smkit.pickle_allow` (the framework tables plus ``security.artifacts.allow_globals``). It runs before the
handler check, which calls ``model_fn`` and so would load the file. The serving runtime repeats the check
before ``model_fn`` (smkit/serving/worker/integrity.py). docs/security.md says what it does and does not catch.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from smkit.packaging.errors import PackagingError
from smkit.packaging.tree import ArchiveMember
from smkit.pickle_allow import Allow, entry_problem, known_as
from smkit.pickle_scan import Global, ScanError, is_candidate, scan_file

ALLOW_FIELD = "security.artifacts.allow_globals"
FORMATS_FIX = (
    "save the model in a format that holds no code: safetensors for tensors (safetensors.torch.save_file), "
    "ONNX, or the framework's native format (XGBoost save_model to .json/.ubj, LightGBM save_model to .txt, "
    "CatBoost .cbm, Keras .keras/SavedModel)"
)


def refused_globals(path: Path, allow: Allow) -> list[tuple[str, Global]]:
    """``(where in the file, global)`` for every global ``path`` would import that ``allow`` does not cover.

    Raises :class:`ScanError` when the file cannot be read to the end."""
    with path.open("rb") as f:
        head = f.read(8)
    if not is_candidate(path, head):
        return []
    refused: list[tuple[str, Global]] = []
    for finding in scan_file(path):
        for found in finding.globals:
            if not allow.matches(found) and (finding.where, found) not in refused:
                refused.append((finding.where, found))
    return refused


def check_allow_entries(entries: Iterable[str]) -> None:
    """Each user entry is well formed (the config model checks them too; the API may pass its own)."""
    for entry in entries:
        problem = entry_problem(entry)
        if problem is not None:
            raise PackagingError(f"{ALLOW_FIELD} entry {entry!r}", problem, "e.g. mypackage.model.MyModel")


def check_pickles(entries: Sequence[ArchiveMember], allow_globals: Sequence[str] = ()) -> None:
    """Raise :class:`PackagingError` naming the first file (and all its globals) the allowlist refuses."""
    check_allow_entries(allow_globals)
    allow = Allow.of(allow_globals)
    for entry in entries:
        if entry.source is None:
            continue
        try:
            refused = refused_globals(entry.source, allow)
        except ScanError as exc:
            raise PackagingError(
                f"{entry.source} ({entry.name} in the archive)",
                f"may hold a pickle but cannot be read to the end without loading it ({exc}), so what it "
                "would import on load is unknown",
                f"{FORMATS_FIX}; or write it with pickle/joblib without lz4 compression",
            ) from None
        if refused:
            unique = list(dict.fromkeys(found for _, found in refused))
            names = ", ".join(known_as(found) for found in unique)
            where = sorted({w for w, _ in refused if w not in ("pickle", "compressed stream")})
            inside = f" (in {', '.join(where)})" if where else ""
            exact = ", ".join(repr(str(found)) for found in unique)
            raise PackagingError(
                f"{entry.source} ({entry.name} in the archive)",
                f"its pickle{inside} imports {names}, which no allow entry covers: loading the file would "
                "import and may call it",
                f"{FORMATS_FIX}; or, only if you trust the file and its source, add {exact} to "
                f"{ALLOW_FIELD} in the deployment config",
            )
