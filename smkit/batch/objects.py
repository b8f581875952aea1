"""Where a job reads its input objects and writes ``<input name>.out``: local paths or ``s3://`` URIs.

Input works like ``S3DataType: S3Prefix``: every object under the prefix (or every file under a directory,
or one file) is one input object. Output objects are named after the input's path relative to the prefix's
folder plus ``.out``, as SageMaker does. Writes are all-or-nothing: a local ``.out`` is written to a hidden
temporary file and renamed; an S3 object is put in one call once the whole output is known.
"""

from __future__ import annotations

import contextlib
import gzip
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from smkit.batch.options import CompressionType
from smkit.object_store import StorageError, atomic_write, s3_client, split_s3_uri

__all__ = [
    "OUTPUT_SUFFIX",
    "InputObject",
    "Sink",
    "StorageError",
    "check_separate",
    "list_inputs",
    "open_sink",
]

OUTPUT_SUFFIX = ".out"


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


def list_inputs(
    location: str, *, compression: CompressionType, endpoint_url: str | None = None
) -> list[InputObject]:
    """Every input object at ``location`` (a file, a directory or an ``s3://`` prefix), sorted by name."""
    objects = (
        _list_s3(location, endpoint_url) if location.startswith("s3://") else _list_local(Path(location))
    )
    if not objects:
        raise StorageError(
            f"input location {location!r} holds no objects; point it at a file, a folder or an s3:// prefix"
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
                f"{obj.uri} is not gzip data ({exc}); use CompressionType None for plain files"
            ) from exc

    return read


def _list_local(path: Path) -> list[InputObject]:
    if path.is_file():
        return [InputObject(path.name, str(path), path.read_bytes)]
    if not path.is_dir():
        raise StorageError(
            f"input location {str(path)!r} does not exist; give a file, a folder or an s3:// prefix"
        )
    files = sorted(
        p
        for p in path.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
    )
    return [InputObject(p.relative_to(path).as_posix(), str(p), p.read_bytes) for p in files]


def _list_s3(uri: str, endpoint_url: str | None) -> list[InputObject]:
    bucket, prefix = split_s3_uri(uri)
    client = s3_client(endpoint_url)
    folder = prefix[: prefix.rfind("/") + 1]
    objects: list[InputObject] = []
    with _s3_errors(f"listing input {uri}"):
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
            raise StorageError(
                f"output location {self.uri!r} is a file; give a folder (it is created if missing)"
            )

    def write(self, name: str, data: bytes) -> str:
        return str(atomic_write(self.root / name, data))

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
        self.bucket, prefix = split_s3_uri(self.uri)
        self.prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
        self._client = s3_client(self.endpoint_url)

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
    """The output location: a folder or an ``s3://`` prefix."""
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
            f"output location {output_location!r} is inside input location {input_location!r}: the .out files would be "
            "read as inputs by the next run; write them somewhere else"
        )
