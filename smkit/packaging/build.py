"""Build a model archive: validate everything first, then stream once into temp outputs and rename.

Order: inputs exist and are separate -> outputs are writable and outside the inputs -> the tree is
safe -> the handler check passes -> write. Nothing is created before the checks pass, and a failure
while writing removes the temporary file/folder, so an error never leaves a partial archive.

Included files (helper modules shared by several models) and vendored wheels (``code/wheels``, for
endpoints with network isolation) are copied with the code folder into a temporary folder first, so that the
handler check and the archive see exactly the ``code/`` that will ship. With vendored wheels, the bytecode
of the vendored modules the check imported goes with them (smkit/packaging/bytecode.py). The handler check runs in the
model's own environment when the caller passes one (``environment``: a function from that staged model
folder to an interpreter and the directories of its installed requirements).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from smkit.digest import sha256_file
from smkit.packaging.bytecode import write_bytecode
from smkit.packaging.errors import PackagingError
from smkit.packaging.handler_check import DEFAULT_CHECK, HandlerCheck, HandlerReport
from smkit.packaging.manifest import ArchiveInfo, Manifest
from smkit.packaging.scan import check_pickles
from smkit.packaging.tree import MANIFEST_NAME, ArchiveMember, check_inputs, collect
from smkit.packaging.vendor import WHEELS_DIR, VendorTarget, vendor_wheels
from smkit.packaging.writer import (
    DEFAULT_LEVEL,
    ArchiveSink,
    DirSink,
    TarGzSink,
    default_threads,
    finish,
    stream_entries,
)


def _existing_ancestor(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path(path.anchor)


def _check_output(path: Path, option: str, inputs: tuple[Path, Path]) -> None:
    resolved = path.resolve()
    for source in inputs:
        if resolved.is_relative_to(source.resolve()):
            raise PackagingError(
                f"{option} {path}",
                f"is inside the input folder {source}, so the output would package itself",
                "write the output outside the code and artifacts folders",
            )
    if option == "output" and path.is_dir():
        raise PackagingError(
            f"{option} {path}", "is a directory", "name the archive file, e.g. build/model.tar.gz"
        )
    base = _existing_ancestor(path.parent)
    if not base.is_dir():
        raise PackagingError(
            f"{option} {path}",
            f"cannot be created because {base} is not a directory",
            "choose an output path whose parent is (or can become) a folder",
        )
    if not os.access(base, os.W_OK | os.X_OK):
        raise PackagingError(
            f"{option} {path}",
            f"the folder {base} is not writable",
            "choose a writable location or fix the folder's permissions",
        )


def _check_uncompressed_target(path: Path) -> None:
    if path.exists() and (
        not path.is_dir() or (any(path.iterdir()) and not (path / MANIFEST_NAME).is_file())
    ):
        raise PackagingError(
            f"uncompressed folder {path}",
            "exists and is not an empty folder or an earlier uncompressed build (no smkit-manifest.json)",
            "name a new or empty folder",
        )


def _replace_dir(staging: Path, dest: Path) -> None:
    if dest.exists():
        old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
        dest.rename(old)
        staging.rename(dest)
        shutil.rmtree(old)
    else:
        staging.rename(dest)


def _included(code: Path, include: Sequence[str | Path]) -> dict[str, Path]:
    """``code/`` name -> included file; refuses folders, links and names that ``--code`` has already."""
    names: dict[str, Path] = {}
    for item in map(Path, include):
        label = f"included file {item}"
        if item.is_symlink() or not item.is_file():
            raise PackagingError(
                label, "is not a regular file", "name a helper module file, not a folder or link"
            )
        if os.path.lexists(code / item.name) or item.name in names:
            raise PackagingError(
                label,
                f"code/{item.name} is there already",
                "rename one of the two: an included file never replaces a file of the code folder or another include",
            )
        names[item.name] = item
    return names


def _stage_code(code: Path, names: dict[str, Path], cleanup: contextlib.ExitStack) -> Path:
    """A temporary copy of ``code`` with the included files added at its top level."""
    staging = Path(tempfile.mkdtemp(prefix="smkit-code-"))
    cleanup.callback(shutil.rmtree, staging, ignore_errors=True)
    staged = staging / "code"
    shutil.copytree(code, staged, symlinks=True)
    for name, source in names.items():
        shutil.copy2(source, staged / name)
    return staged


def _relabel(error: PackagingError, staged: Path, code: Path, names: dict[str, Path]) -> PackagingError:
    """The same error, naming the user's files instead of their staged copies."""

    def real(text: str) -> str:
        for name, source in names.items():
            text = text.replace(str(staged / name), str(source))
        return text.replace(str(staged.resolve()), str(code)).replace(str(staged), str(code))

    return PackagingError(real(error.subject), real(error.problem), real(error.fix))


def build_archive(
    code_dir: str | Path,
    artifacts_dir: str | Path,
    output: str | Path | None,
    *,
    include: Sequence[str | Path] = (),
    uncompressed: str | Path | None = None,
    handler: HandlerCheck = DEFAULT_CHECK,
    threads: int | None = None,
    level: int = DEFAULT_LEVEL,
    progress: bool | None = None,
    vendor: VendorTarget | None = None,
    wheel_cache: Path | None = None,
    allow_globals: Sequence[str] = (),
) -> Manifest:
    """Package ``code_dir`` (as ``code/``) and ``artifacts_dir`` (at the root) into ``output``.

    ``output`` is a reproducible ``.tar.gz`` (byte-identical for identical inputs, whatever ``threads``);
    ``uncompressed`` additionally (or instead) lays the same tree out as a folder for
    ``S3DataType=S3Prefix`` / ``CompressionType=None`` model data (docs/cloudformation.md). ``include``: files
    copied into ``code/`` next to the handler (helper modules shared by several models). ``handler``: how
    the handler is checked (the entry point, the interpreter or the model's environment, the image's
    default handlers and environment). ``progress``: None shows a bar on a terminal for inputs of 64 MiB or
    more. ``vendor``: put the requirements' wheels for that platform into ``code/wheels`` (downloads cached
    under ``wheel_cache``). ``allow_globals``: pickle globals
    allowed beyond the framework tables (smkit/pickle_allow.py), recorded in the manifest for the runtime.
    Raises :class:`PackagingError`.
    """
    code, artifacts = Path(code_dir), Path(artifacts_dir)
    out = Path(output) if output is not None else None
    flat = Path(uncompressed) if uncompressed is not None else None
    _check_request(code, artifacts, out, flat, vendoring=vendor is not None)
    names = _included(code, include)
    with contextlib.ExitStack() as cleanup:
        staged = bool(names) or vendor is not None or handler.environment is not None
        shipped = _stage_code(code, names, cleanup) if staged else code
        try:
            entries, report = _checked_tree(
                code,
                shipped,
                artifacts,
                (out, flat),
                cleanup,
                vendor=vendor,
                wheel_cache=wheel_cache,
                progress=progress is not False,
                allow_globals=allow_globals,
                handler=handler,
            )
        except PackagingError as error:
            if shipped is code:
                raise
            raise _relabel(error, shipped, code, names) from None
        manifest = Manifest(entries=(), handler=report.for_manifest(), pickle_allow=tuple(allow_globals))
        manifest, info = _write(
            entries,
            manifest,
            out,
            flat,
            cleanup,
            threads=threads or default_threads(),
            level=level,
            progress=progress,
        )
    return dataclasses.replace(
        manifest,
        archive=info,
        uncompressed_dir=str(flat) if flat is not None else None,
        warnings=report.warnings,
    )


def _checked_tree(
    code: Path,
    shipped: Path,
    artifacts: Path,
    outputs: tuple[Path | None, Path | None],
    cleanup: contextlib.ExitStack,
    *,
    vendor: VendorTarget | None,
    wheel_cache: Path | None,
    progress: bool,
    allow_globals: Sequence[str],
    handler: HandlerCheck,
) -> tuple[list[ArchiveMember], HandlerReport]:
    """Everything that can refuse the build, before anything is written: the wheels vendored into ``shipped``
    (the staged code), the pickles, the outputs, the handler; the archive's entries and the handler's report."""
    cache = wheel_cache
    if vendor is not None:
        cache = _vendor(code, shipped, vendor, wheel_cache, cleanup, progress=progress)
    python, extra_paths = handler.interpreter(shipped, artifacts)
    entries = collect(shipped, artifacts)
    # Before the handler check, whose model_fn would load the files.
    check_pickles(entries, allow_globals)
    _check_outputs(*outputs, (code, artifacts))
    report = handler.run(shipped, artifacts, python, extra_paths)
    if vendor is not None and _bytecode(shipped / WHEELS_DIR, report, vendor, python, cache):
        entries = collect(shipped, artifacts)
    return entries, report


def _check_outputs(out: Path | None, flat: Path | None, inputs: tuple[Path, Path]) -> None:
    """Refuse an archive or folder that would overwrite an input, and a folder that is not empty."""
    if out is not None:
        _check_output(out, "output", inputs)
    if flat is not None:
        _check_output(flat, "uncompressed folder", inputs)
        _check_uncompressed_target(flat)


def _write(
    entries: list[ArchiveMember],
    manifest: Manifest,
    out: Path | None,
    flat: Path | None,
    cleanup: contextlib.ExitStack,
    *,
    threads: int,
    level: int,
    progress: bool | None,
) -> tuple[Manifest, ArchiveInfo | None]:
    """Stream ``entries`` and then ``manifest`` (with their rows) into the archive and/or the folder, and put
    each in place in one rename; the manifest written and the archive's facts."""
    sinks, tmp_file, staging = _open_sinks(out, flat, cleanup, threads=threads, level=level)
    rows = stream_entries(entries, sinks, progress=progress, label=str(out or flat))
    manifest = dataclasses.replace(manifest, entries=rows)
    finish(sinks, manifest.to_json())
    return manifest, _commit(out, tmp_file, flat, staging)


def _check_request(
    code: Path, artifacts: Path, out: Path | None, flat: Path | None, *, vendoring: bool
) -> None:
    """Refuse a build with nowhere to write, unreadable inputs, or a code folder that has its own wheels/."""
    if out is None and flat is None:
        raise PackagingError(
            "output", "missing", "give an archive file and/or a folder for the uncompressed tree"
        )
    check_inputs(code, artifacts)
    if vendoring and os.path.lexists(code / WHEELS_DIR):
        raise PackagingError(
            f"code folder {code}",
            f"already has a {WHEELS_DIR}/ folder, and vendoring wheels would write its own there",
            f"remove {code / WHEELS_DIR} (smkit vendors the wheels of requirements.txt itself)",
        )


def _vendor(
    code: Path,
    shipped: Path,
    target: VendorTarget,
    cache: Path | None,
    cleanup: contextlib.ExitStack,
    *,
    progress: bool,
) -> Path:
    """Put the wheels of ``code``'s requirements into the shipped ``code/wheels``; the download cache used
    (a temporary one, removed by ``cleanup``, when none is given)."""
    if cache is None:
        cache = Path(tempfile.mkdtemp(prefix="smkit-wheels-"))
        cleanup.callback(shutil.rmtree, cache, ignore_errors=True)
    vendor_wheels(code, shipped / WHEELS_DIR, target=target, cache=cache, progress=progress)
    return cache


def _open_sinks(
    out: Path | None, flat: Path | None, cleanup: contextlib.ExitStack, *, threads: int, level: int
) -> tuple[list[ArchiveSink], IO[bytes] | None, Path | None]:
    """Where the entries are written: a temporary file beside ``out`` and a staging folder beside ``flat``,
    each removed by ``cleanup`` unless :func:`_commit` moves it into place."""
    sinks: list[ArchiveSink] = []
    tmp_file: IO[bytes] | None = None
    staging: Path | None = None
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp_file = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed via the exit stack
            dir=out.parent, prefix=f".{out.name}.", suffix=".tmp", delete=False
        )
        cleanup.callback(_remove, Path(tmp_file.name))
        cleanup.callback(tmp_file.close)
        sinks.append(TarGzSink(tmp_file, threads=threads, level=level))
    if flat is not None:
        flat.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{flat.name}.", suffix=".tmp", dir=flat.parent))
        cleanup.callback(shutil.rmtree, staging, ignore_errors=True)
        sinks.append(DirSink(staging))
    for sink in sinks:
        cleanup.callback(sink.abort)
    return sinks, tmp_file, staging


def _commit(
    out: Path | None, tmp_file: IO[bytes] | None, flat: Path | None, staging: Path | None
) -> ArchiveInfo | None:
    """Move the finished archive and folder into place (each in one rename); the archive's facts."""
    info = None
    if out is not None and tmp_file is not None:
        tmp_file.flush()
        os.fsync(tmp_file.fileno())
        tmp_file.close()
        os.chmod(tmp_file.name, 0o644)
        os.replace(tmp_file.name, out)
        info = ArchiveInfo(str(out), out.stat().st_size, sha256_file(out))
    if flat is not None and staging is not None:
        _replace_dir(staging, flat)
    return info


def _bytecode(
    wheels: Path, report: HandlerReport, vendor: VendorTarget, python: str, cache: Path | None
) -> bool:
    """Ship the bytecode of the vendored modules the check imported, when it ran on the image's Python."""
    version = (report.environment or {}).get("python", "")
    if cache is None or not report.modules or not version.startswith(f"{vendor.python}."):
        return False
    return (
        write_bytecode(wheels, report.modules, python=python, python_version=version, cache=cache) is not None
    )


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
