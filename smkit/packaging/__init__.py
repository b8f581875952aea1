"""The model packager: validate a handler and build a reproducible, safe ``model.tar.gz``.

Public API::

    manifest = build_archive("model_code/tabular/code", "model_code/tabular/artifacts", "build/model.tar.gz")
    report = check_handler(code_dir, artifacts_dir)        # HandlerReport, raises PackagingError
    listing = inspect_archive("build/model.tar.gz")        # InspectReport, raises PackagingError
    build_archive(code, artifacts, out, handler=HandlerCheck(load_model=False))  # how the handler is checked

Safe extraction for consumers of archives lives in :mod:`smkit.archive` (``safe_extract``).
This package never imports the serving runtime.
"""

from smkit.archive import ArchiveError, Member, safe_extract
from smkit.packaging.build import build_archive
from smkit.packaging.errors import PackagingError
from smkit.packaging.handler_check import HandlerCheck, HandlerReport, check_handler
from smkit.packaging.inspection import InspectReport, inspect_archive
from smkit.packaging.manifest import ArchiveInfo, Manifest, ManifestEntry
from smkit.packaging.requirements import parse_requirements

__all__ = [
    "ArchiveError",
    "ArchiveInfo",
    "HandlerCheck",
    "HandlerReport",
    "InspectReport",
    "Manifest",
    "ManifestEntry",
    "Member",
    "PackagingError",
    "build_archive",
    "check_handler",
    "inspect_archive",
    "parse_requirements",
    "safe_extract",
]
