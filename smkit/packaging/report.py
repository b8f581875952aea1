"""What makes an archive large: its size by top-level entry, the largest vendored wheels, and the fixes.

SageMaker downloads and unpacks model data before the container starts, within
``ModelDataDownloadTimeoutInSeconds`` (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ProductionVariant.html),
and every model of a multi-model endpoint is fetched on its first call, so a few hundred megabytes of
vendored wheels cost every start. Above :data:`WARN_BYTES` the report says how to shrink it.
"""

from __future__ import annotations

from collections import defaultdict

from smkit.packaging.manifest import Manifest
from smkit.packaging.vendor import WHEELS_DIR

WARN_BYTES = 100 * 1024 * 1024
LARGEST_WHEELS = 5
WHEELS_PREFIX = f"code/{WHEELS_DIR}/"


def _megabytes(size: int) -> str:
    return f"{size / 1024 / 1024:,.1f} MiB"


def _group(path: str) -> str:
    if path.startswith(WHEELS_PREFIX):
        return WHEELS_PREFIX
    head, slash, _ = path.partition("/")
    return head + slash


def size_report(manifest: Manifest, *, warn_bytes: int = WARN_BYTES) -> list[str]:
    """Lines for ``smkit package``: sizes by entry, the largest wheels, and a warning with the fixes."""
    groups: dict[str, int] = defaultdict(int)
    for entry in manifest.entries:
        groups[_group(entry.path)] += entry.size
    lines = ["size by top-level entry (before compression):"]
    width = max((len(name) for name in groups), default=0)
    for name, size in sorted(groups.items(), key=lambda item: -item[1]):
        lines.append(f"  {name:<{width}}  {_megabytes(size):>12}")
    vendored = [e for e in manifest.entries if e.path.startswith(WHEELS_PREFIX)]
    wheels = sorted((e for e in vendored if e.path.endswith(".whl")), key=lambda e: -e.size)
    if wheels:
        lines.append("largest vendored wheels:")
        lines.extend(
            f"  {e.path.removeprefix(WHEELS_PREFIX)}  {_megabytes(e.size)}" for e in wheels[:LARGEST_WHEELS]
        )
    # smkit/packaging/bytecode.py: what the handler's imports would otherwise compile at each load.
    lines.extend(
        f"bytecode of the imported vendored modules: {e.path.removeprefix(WHEELS_PREFIX)}  {_megabytes(e.size)}"
        for e in vendored
        if not e.path.endswith(".whl")
    )
    size = manifest.archive.size if manifest.archive is not None else manifest.total_size
    if size > warn_bytes:
        lines.append(
            f"warning: the archive is {_megabytes(size)} (over {_megabytes(warn_bytes)}); each endpoint start "
            "downloads and unpacks it. To shrink it: install large packages into the image instead of "
            "vendoring them (the config's image.requirements file, or container/requirements-extra.txt for "
            "every model on the kit's image); deploy large weights uncompressed (model_data.source: prefix, "
            "smkit package --uncompressed) or from S3 (model_data.source: s3)"
        )
    return lines
