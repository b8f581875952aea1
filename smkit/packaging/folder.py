"""One folder as one reproducible ``.tar.gz``: what an adapter component's ArtifactUrl must point at, and a
channel's archive (``additional_model_data`` with ``source: archive`` and a folder; SageMaker extracts it).

SageMaker takes an adapter's weights as "a single gzip compressed tar archive (.tar.gz suffix)"
(https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_InferenceComponentContainerSpecification.html).
The archive holds the folder's files at its root (``adapter_config.json``, ``adapter_model.safetensors``, ...),
nothing else, written as model archives are (:mod:`smkit.packaging.writer`: sorted entries, fixed
headers, no gzip timestamp), so the same files give the same bytes on every run and machine, and the
deployed copy's content hash changes only when the adapter does. Interpreter caches and VCS folders are
skipped; links out of the folder, devices and FIFOs are refused (:mod:`smkit.packaging.tree`). The archive
is written to a temporary sibling and renamed into place: a refused folder leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

from smkit.packaging.errors import PackagingError
from smkit.packaging.tree import scan
from smkit.packaging.writer import DEFAULT_LEVEL, TarGzSink, default_threads, stream_entries


def archive_folder(
    folder: Path, output: Path, *, level: int = DEFAULT_LEVEL, label: str = "adapter folder"
) -> str:
    """Write ``folder``'s files as the gzip-compressed tar archive ``output``; its sha256 (hex). ``label``
    names the folder in errors."""
    if not folder.is_dir():
        raise PackagingError(f"{label} {folder}", "is not a folder", "give the folder that holds the files")
    entries = sorted(scan(folder, prefix="", label=label), key=lambda e: e.sort_key)
    if not any(not e.is_dir for e in entries):
        raise PackagingError(
            f"{label} {folder}", "the folder is empty", "give the folder that holds the files"
        )
    output.parent.mkdir(parents=True, exist_ok=True)
    handle: Any = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed below, removed on failure
        dir=output.parent, prefix=f".{output.name}.", suffix=".tmp", delete=False
    )
    try:
        sink = TarGzSink(handle, threads=default_threads(), level=level)
        try:
            stream_entries(entries, [sink], progress=False, label=output.name)
        except BaseException:
            sink.abort()
            raise
        sink.close()
        handle.flush()
        os.fsync(handle.fileno())
        handle.close()
        os.chmod(handle.name, 0o644)
        os.replace(handle.name, output)
    except BaseException:
        handle.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(handle.name)
        raise
    digest = hashlib.sha256()
    with output.open("rb") as done:
        for chunk in iter(lambda: done.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def upload_folder_archive(s3: Any, folder: Path, bucket: str, key: str) -> str:
    """``folder`` archived by :func:`archive_folder` and uploaded to ``s3://bucket/key`` with the S3 client
    ``s3`` (an adapter's weights where they are already in S3: ``artifact_url``); the object's URI."""
    with tempfile.TemporaryDirectory(prefix="smkit-adapter-") as scratch:
        archive = Path(scratch) / Path(key).name
        archive_folder(folder, archive)
        s3.upload_file(str(archive), bucket, key)
    return f"s3://{bucket}/{key}"
