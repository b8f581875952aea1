"""``smkit-manifest.json``: size and sha256 of every file in a model archive, plus what the handler check found.

It is the last member of the archive (so it can be computed while the files stream through once) and
is itself not listed. Its JSON is canonical (sorted keys, fixed indentation), so it never differs
between two builds of the same inputs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from smkit.packaging.errors import PackagingError
from smkit.packaging.savedmodel import SavedModelReport

FORMAT = "smkit.model-archive/1"


# Frameworks a summary names when the check environment holds them (with the model's own requirements).
FRAMEWORKS = (
    "catboost", "lightgbm", "numpy", "onnxruntime", "pandas", "scikit-learn", "tensorflow", "tensorflow-cpu",
    "torch", "transformers", "xgboost", "xgboost-cpu",
)  # fmt: skip


def checked_summary(handler: dict[str, Any]) -> str | None:
    """One line on the interpreter and packages the handler was checked with: the Python version, how many
    packages, the versions of the model's requirements and frameworks among them; every pin stays in the
    manifest (``handler.checked_with``), not on the screen."""
    checked = handler.get("checked_with")
    if not checked:
        return None
    packages: dict[str, str] = checked.get("packages", {})
    wanted = {str(r).split("==")[0].split("[")[0].strip().lower() for r in handler.get("requirements", [])}
    wanted |= set(FRAMEWORKS)
    named = ", ".join(f"{name}=={version}" for name, version in packages.items() if name.lower() in wanted)
    among = f", among them {named}" if named else ""
    return (
        f"checked with: Python {checked.get('python')}, {len(packages)} packages{among} "
        "(every version: smkit-manifest.json, handler.checked_with)"
    )


def checked_with(handler: dict[str, Any] | None) -> list[str]:
    """The line naming the interpreter and package versions the handler was checked with, if recorded."""
    line = checked_summary(handler or {})
    return [line] if line else []


@dataclass(frozen=True)
class ManifestEntry:
    """One file of the archive."""

    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class ArchiveInfo:
    """The written output itself (not part of ``smkit-manifest.json``)."""

    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Manifest:
    """The files of a model archive and the handler summary; ``archive`` is set after a build."""

    entries: tuple[ManifestEntry, ...]
    handler: dict[str, Any] | None = None
    archive: ArchiveInfo | None = None
    uncompressed_dir: str | None = None
    warnings: tuple[str, ...] = field(default=())
    # Pickle globals allowed beyond the framework tables (security.artifacts.allow_globals); the serving
    # runtime's check before model_fn reads them from here (smkit/serving/worker/integrity.py).
    pickle_allow: tuple[str, ...] = field(default=())

    @property
    def total_size(self) -> int:
        return sum(e.size for e in self.entries)

    def by_path(self) -> dict[str, ManifestEntry]:
        return {e.path: e for e in self.entries}

    def to_json(self) -> bytes:
        """Canonical JSON bytes as stored in the archive."""
        data: dict[str, Any] = {
            "format": FORMAT,
            "handler": self.handler,
            "files": [{"path": e.path, "size": e.size, "sha256": e.sha256} for e in self.entries],
            "total_size": self.total_size,
        }
        if self.pickle_allow:
            data["pickle_allow"] = list(self.pickle_allow)
        return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8")

    @classmethod
    def from_json(cls, raw: bytes, *, label: str) -> Manifest:
        """Parse a stored manifest; raise :class:`PackagingError` naming the bad field."""
        try:
            data = json.loads(raw.decode("utf-8"))
            if data.get("format") != FORMAT:
                raise PackagingError(
                    f"{label}: format",
                    f"{data.get('format')!r} is not {FORMAT!r}",
                    "rebuild the archive with this version of `smkit package`",
                )
            entries = tuple(
                ManifestEntry(str(f["path"]), int(f["size"]), str(f["sha256"])) for f in data["files"]
            )
        except (
            UnicodeDecodeError,
            json.JSONDecodeError,
            KeyError,
            TypeError,
            ValueError,
            AttributeError,
        ) as exc:
            if isinstance(exc, PackagingError):
                raise
            raise PackagingError(
                label, f"not a valid manifest ({exc})", "rebuild the archive with `smkit package`"
            ) from exc
        allow = tuple(str(a) for a in data.get("pickle_allow") or ())
        return cls(entries=entries, handler=data.get("handler"), pickle_allow=allow)

    def summary(self) -> str:
        """A human-readable table: the output, the handler, then every file with size and sha256."""
        lines = []
        if self.archive is not None:
            lines.append(f"{self.archive.path}: {self.archive.size:,} bytes, sha256 {self.archive.sha256}")
        if self.uncompressed_dir is not None:
            lines.append(f"{self.uncompressed_dir}/: uncompressed layout (S3Prefix, CompressionType None)")
        if self.handler:
            hooks = ", ".join(self.handler.get("hooks", []))
            lines.append(f"handler: {self.handler.get('form')} form ({hooks})")
            lines.extend(checked_with(self.handler))
            for label, signatures in self.handler.get("saved_models", {}).items():
                lines.extend(
                    f"saved model: {line}" for line in SavedModelReport(label, signatures).describe()
                )
        width = max((len(f"{e.size:,}") for e in self.entries), default=4)
        lines.append(f"  {'size':>{width}}  {'sha256':<64}  path")
        lines.extend(f"  {e.size:>{width},}  {e.sha256}  {e.path}" for e in self.entries)
        lines.append(f"  {len(self.entries)} files, {self.total_size:,} bytes before compression")
        lines.extend(f"warning: {w}" for w in self.warnings)
        return "\n".join(lines)
