"""Model data as the platform hands it to a container: a ``model.tar.gz`` extracted into a directory.

SageMaker downloads ``ModelDataUrl`` and extracts it into ``/opt/ml/model`` before the container starts
(docs/hosting-contract.md); for multi-model endpoints it does the same per ``TargetModel`` on first use and
then calls the container's ``POST /models`` with that directory (docs/multi-model.md).
"""

from __future__ import annotations

import shutil
import tarfile
import tempfile
from pathlib import Path


class ArtifactError(ValueError):
    """Model data that is missing or is not a readable tar.gz archive."""


def extract_archive(archive: Path, dest: Path) -> Path:
    """Extract ``archive`` into ``dest`` (created; all-or-nothing) and return ``dest``.

    The ``data`` extraction filter refuses absolute paths, ``..`` and device files, so an archive cannot
    write outside ``dest``.
    """
    if dest.is_dir():
        return dest
    if not archive.is_file():
        raise ArtifactError(f"model archive {archive} does not exist; build it first (make package-model)")
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        with tarfile.open(archive, "r:*") as tar:
            tar.extractall(staging, filter="data")
        staging.rename(dest)
    except (tarfile.TarError, OSError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise ArtifactError(f"model archive {archive} is not a readable tar.gz archive: {exc}") from exc
    return dest
