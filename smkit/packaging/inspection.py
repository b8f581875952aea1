"""List and re-validate an existing model archive.

Every member is checked as :func:`smkit.archive.safe_extract` checks it (no absolute or ``..`` names,
links, devices or duplicates); sizes and sha256 are compared with ``smkit-manifest.json`` both ways; the
layout (``code/inference.py``, ``code/requirements.txt``) is checked; and, unless disabled, the
archive is extracted into a temporary folder and its handler checked as ``smkit package`` would.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path

from smkit.archive import ArchiveError, Member, iter_members, safe_extract
from smkit.packaging.errors import PackagingError
from smkit.packaging.handler_check import DEFAULT_CHECK, HandlerCheck, HandlerReport
from smkit.packaging.manifest import Manifest, checked_with
from smkit.packaging.scan import check_pickles
from smkit.packaging.tree import CODE_PREFIX, MANIFEST_NAME, scan

MAX_MANIFEST_BYTES = 64 << 20


@dataclass(frozen=True)
class InspectReport:
    """What an archive holds and what re-validation found."""

    path: str
    members: tuple[Member, ...]
    manifest: Manifest | None
    handler: HandlerReport | None
    warnings: tuple[str, ...]

    def summary(self) -> str:
        """The member table followed by the verdict."""
        files = [m for m in self.members if not m.is_dir]
        width = max((len(f"{m.size:,}") for m in files), default=4)
        lines = [f"{self.path}: {len(files)} files, {sum(m.size for m in files):,} bytes before compression"]
        lines.append(f"  {'mode':<4}  {'size':>{width}}  {'sha256':<64}  path")
        for m in self.members:
            digest = m.sha256 or "-"
            name = f"{m.name}/" if m.is_dir else m.name
            lines.append(f"  {m.mode:04o}  {m.size:>{width},}  {digest:<64}  {name}")
        if self.manifest is not None:
            lines.append(f"manifest: {len(self.manifest.entries)} files match their size and sha256")
            lines.extend(checked_with(self.manifest.handler))
        if self.handler is not None:
            lines.append(
                f"handler: {self.handler.form} form ({', '.join(self.handler.hooks)}) passes the check"
            )
            lines.extend(f"saved model: {line}" for s in self.handler.saved_models for line in s.describe())
        lines.extend(f"warning: {w}" for w in self.warnings)
        return "\n".join(lines)


def _read_members(path: Path, *, extract_to: Path | None) -> tuple[list[Member], bytes | None]:
    """Members with sha256, and the raw smkit-manifest.json if present."""
    if extract_to is not None:
        members = safe_extract(path, extract_to)
        manifest_file = extract_to / MANIFEST_NAME
        raw = manifest_file.read_bytes() if manifest_file.is_file() else None
        return members, raw
    found: list[Member] = []
    raw = None
    for member, reader in iter_members(path):
        if reader is None:
            found.append(member)
            continue
        digest = hashlib.sha256()
        keep = member.name == MANIFEST_NAME and member.size <= MAX_MANIFEST_BYTES
        buffer = bytearray()
        while chunk := reader.read(1 << 20):
            digest.update(chunk)
            if keep:
                buffer += chunk
        if keep:
            raw = bytes(buffer)
        found.append(Member(member.name, False, member.size, member.mode, digest.hexdigest()))
    return found, raw


def _verify(label: str, members: list[Member], manifest: Manifest) -> None:
    listed = manifest.by_path()
    actual = {m.name: m for m in members if not m.is_dir and m.name != MANIFEST_NAME}
    for name, member in actual.items():
        entry = listed.get(name)
        if entry is None:
            raise PackagingError(
                f"{label}: {name}",
                "is not listed in smkit-manifest.json",
                "rebuild the archive with `smkit package`",
            )
        if (entry.size, entry.sha256) != (member.size, member.sha256):
            raise PackagingError(
                f"{label}: {name}",
                f"size/sha256 {member.size}/{member.sha256} differ from the manifest's {entry.size}/{entry.sha256}",
                "the archive was changed after packaging; rebuild it with `smkit package`",
            )
    for name in listed:
        if name not in actual:
            raise PackagingError(
                f"{label}: {name}",
                "is listed in smkit-manifest.json but missing from the archive",
                "rebuild the archive with `smkit package`",
            )


def _check_layout(label: str, members: list[Member], entry_point: str) -> None:
    names = {m.name for m in members if not m.is_dir}
    for required in (f"{CODE_PREFIX}/{entry_point}", f"{CODE_PREFIX}/requirements.txt"):
        if required not in names:
            raise PackagingError(
                f"{label}: {required}",
                "missing from the archive",
                "package the model with smkit's packager (`smkit package`), which lays out code/ and its files",
            )


def inspect_archive(
    path: str | Path, *, handler_check: bool = True, handler: HandlerCheck = DEFAULT_CHECK
) -> InspectReport:
    """List ``path`` and re-validate it; raise :class:`PackagingError` on the first problem.

    ``handler_check``: extract the archive and check its handler, ``handler`` says how (as for
    :func:`smkit.packaging.build_archive`); its entry point is the one the layout must hold either way.
    """
    archive = Path(path)
    label = str(archive)
    warnings: list[str] = []
    with tempfile.TemporaryDirectory(prefix="smkit-inspect-") as tmp:
        model_dir = Path(tmp) / "model" if handler_check else None
        try:
            members, raw = _read_members(archive, extract_to=model_dir)
        except PackagingError:
            raise
        except ArchiveError as exc:
            raise PackagingError.from_archive_error(exc) from exc
        manifest = None
        if raw is None:
            warnings.append(
                "no smkit-manifest.json: not built by `smkit package`, so hashes were not verified"
            )
        else:
            manifest = Manifest.from_json(raw, label=f"{label}: {MANIFEST_NAME}")
            _verify(label, members, manifest)
        _check_layout(label, members, handler.entry_point)
        report = None
        if model_dir is not None:
            python, extra_paths = handler.interpreter(model_dir / CODE_PREFIX, model_dir)
            try:
                # Before the handler check, whose model_fn would load the files (smkit/packaging/scan.py).
                allow = manifest.pickle_allow if manifest is not None else ()
                check_pickles(scan(model_dir, prefix="", label="archive"), allow)
                report = handler.run(model_dir / CODE_PREFIX, model_dir, python, extra_paths)
            except PackagingError as exc:
                # Name files inside the archive, not the temporary folder they were checked in.
                def here(text: str) -> str:
                    return text.replace(f"{model_dir}/", f"{label}:").replace(str(model_dir), label)

                raise PackagingError(here(exc.subject), here(exc.problem), here(exc.fix)) from exc
            warnings.extend(report.warnings)
    return InspectReport(label, tuple(members), manifest, report, tuple(warnings))
