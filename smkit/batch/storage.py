"""Where a job reads its input objects and writes ``<input name>.out``: local paths or ``s3://`` URIs.

Input works like ``S3DataType: S3Prefix``: every object under the prefix (or every file under a directory,
or one file) is one input object. Output objects are named after the input's path relative to the prefix's
folder plus ``.out``, as SageMaker does. Writes are all-or-nothing: a local ``.out`` is written to a hidden
temporary file and renamed; an S3 object is put in one call once the whole output is known.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from smkit.batch.options import CompressionType

OUTPUT_SUFFIX = ".out"


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# mkstemp creates 0600 files; a finished .out gets the mode any new file would get.
FILE_MODE = 0o666 & ~_current_umask()


class StorageError(ValueError):
    """An input that does not exist or is empty, or an output location that cannot be written."""


@dataclass(frozen=True)
class InputObject:
    """One input object: ``name`` is its path relative to the input location, ``uri`` is for messages."""

    name: str
    uri: str
    read: Callable[[], bytes]


class Sink(Protocol):
    """An output location."""

    uri: str

    def write(self, name: str, data: bytes) -> str:
        """Store ``data`` as ``name`` all at once; return the URI written."""
        ...

    def discard(self, name: str) -> bool:
        """Remove ``name`` if a previous run left it; return True when something was removed."""
        ...


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/key`` -> ``(bucket, key)``; raise :class:`StorageError` for anything else."""
    if not uri.startswith("s3://") or len(uri) <= 5:
        raise StorageError(f"{uri!r} is not an s3:// URI; use s3://bucket/prefix")
    bucket, _, key = uri[5:].partition("/")
    if not bucket:
        raise StorageError(f"{uri!r} has no bucket; use s3://bucket/prefix")
    return bucket, key


def _s3_client(endpoint_url: str | None) -> Any:
    import boto3  # the local extra; imported here so that local-file jobs do not need it

    return boto3.client("s3", endpoint_url=endpoint_url)


def list_inputs(
    location: str, *, compression: CompressionType, endpoint_url: str | None = None
) -> list[InputObject]:
    """Every input object at ``location`` (a file, a directory or an ``s3://`` prefix), sorted by name."""
    objects = (
        _list_s3(location, endpoint_url) if location.startswith("s3://") else _list_local(Path(location))
    )
    if not objects:
        raise StorageError(
            f"--input {location!r} holds no objects; point it at a file, folder or s3:// prefix"
        )
    if compression is CompressionType.GZIP:
        return [InputObject(o.name, o.uri, _gunzipped(o)) for o in objects]
    return objects


def _gunzipped(obj: InputObject) -> Callable[[], bytes]:
    def read() -> bytes:
        try:
            return gzip.decompress(obj.read())
        except (OSError, EOFError) as exc:
            raise StorageError(
                f"{obj.uri} is not gzip data ({exc}); drop --compression-type Gzip for plain files"
            ) from exc

    return read


def _list_local(path: Path) -> list[InputObject]:
    if path.is_file():
        return [InputObject(path.name, str(path), path.read_bytes)]
    if not path.is_dir():
        raise StorageError(f"--input {str(path)!r} does not exist; give a file, a folder or an s3:// prefix")
    files = sorted(
        p
        for p in path.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
    )
    return [InputObject(p.relative_to(path).as_posix(), str(p), p.read_bytes) for p in files]


def _list_s3(uri: str, endpoint_url: str | None) -> list[InputObject]:
    bucket, prefix = parse_s3_uri(uri)
    client = _s3_client(endpoint_url)
    folder = prefix[: prefix.rfind("/") + 1]
    objects: list[InputObject] = []
    with _s3_errors(f"listing --input {uri}"):
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for entry in page.get("Contents", []):
                key = entry["Key"]
                if key.endswith("/"):
                    continue
                reader = _s3_reader(client, bucket, key)
                objects.append(InputObject(key[len(folder) :], f"s3://{bucket}/{key}", reader))
    return sorted(objects, key=lambda o: o.name)


def _s3_reader(client: Any, bucket: str, key: str) -> Callable[[], bytes]:
    def read() -> bytes:
        with _s3_errors(f"reading s3://{bucket}/{key}"):
            return bytes(client.get_object(Bucket=bucket, Key=key)["Body"].read())

    return read


@contextlib.contextmanager
def _s3_errors(action: str) -> Iterator[None]:
    """Turn botocore's errors into a :class:`StorageError` that says what was being done."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        yield
    except (BotoCoreError, ClientError) as exc:
        raise StorageError(f"{action} failed: {exc}") from exc


@dataclass
class LocalSink:
    """A local output folder; ``.out`` files appear only when complete (temporary file + rename)."""

    root: Path
    uri: str = ""

    def __post_init__(self) -> None:
        self.uri = str(self.root)
        if self.root.exists() and not self.root.is_dir():
            raise StorageError(f"--output {self.uri!r} is a file; give a folder (it is created if missing)")

    def write(self, name: str, data: bytes) -> str:
        target = self.root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.chmod(temp, FILE_MODE)
            os.replace(temp, target)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        return str(target)

    def discard(self, name: str) -> bool:
        target = self.root / name
        if target.is_file():
            target.unlink()
            return True
        return False


@dataclass
class S3Sink:
    """An ``s3://bucket/prefix`` output location; each ``.out`` is one PutObject of the whole output."""

    uri: str
    endpoint_url: str | None = None

    def __post_init__(self) -> None:
        self.bucket, prefix = parse_s3_uri(self.uri)
        self.prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
        self._client = _s3_client(self.endpoint_url)

    def write(self, name: str, data: bytes) -> str:
        key = self.prefix + name
        with _s3_errors(f"writing s3://{self.bucket}/{key}"):
            self._client.put_object(Bucket=self.bucket, Key=key, Body=data)
        return f"s3://{self.bucket}/{key}"

    def discard(self, name: str) -> bool:
        key = self.prefix + name
        try:
            self._client.head_object(Bucket=self.bucket, Key=key)
        except self._client.exceptions.ClientError:
            return False
        with _s3_errors(f"removing s3://{self.bucket}/{key}"):
            self._client.delete_object(Bucket=self.bucket, Key=key)
        return True


def open_sink(location: str, *, endpoint_url: str | None = None) -> Sink:
    """The output location for ``--output`` (a folder or an ``s3://`` prefix)."""
    if location.startswith("s3://"):
        return S3Sink(location, endpoint_url)
    return LocalSink(Path(location))


def check_separate(input_location: str, output_location: str) -> None:
    """Refuse an output location inside the input location: its ``.out`` files would be inputs next run."""
    if input_location.startswith("s3://") != output_location.startswith("s3://"):
        return
    if input_location.startswith("s3://"):
        inside = output_location.rstrip("/").startswith(input_location.rstrip("/"))
    else:
        source, target = Path(input_location).resolve(), Path(output_location).resolve()
        inside = source.is_dir() and (target == source or source in target.parents)
    if inside:
        raise StorageError(
            f"--output {output_location!r} is inside --input {input_location!r}: the .out files would be "
            "read as inputs by the next run; write them somewhere else"
        )
