"""Object storage for async inference: ``s3://`` (moto's server or AWS, through boto3) and ``file://``.

Writes are all-or-nothing: an S3 PutObject is atomic, a file is written beside its target and renamed.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

SCHEMES = ("s3", "file")


class StorageError(ValueError):
    """A location that is malformed, unsupported or unreadable; the message names it."""


def file_uri(path: str | Path) -> str:
    """``file://`` URI of a local path (made absolute)."""
    return Path(path).resolve().as_uri()


def join(base: str, *parts: str) -> str:
    """Append key parts to an ``s3://`` or ``file://`` location."""
    cleaned = [p.strip("/") for p in parts if p and p.strip("/")]
    return "/".join([base.rstrip("/"), *cleaned])


def check_uri(uri: str, *, what: str) -> str:
    """Return ``uri`` when it is ``s3://bucket/key`` or ``file:///path``; else a StorageError saying so."""
    parsed = urlparse(uri)
    if parsed.scheme == "s3" and parsed.netloc:
        return uri
    if parsed.scheme == "file" and parsed.path.startswith("/"):
        return uri
    raise StorageError(
        f"{what} {uri!r} is not supported; use s3://BUCKET/KEY (moto's server or AWS) or file:///ABSOLUTE/PATH"
    )


@dataclass
class Storage:
    """Reads and writes locations; ``s3_endpoint_url`` points boto3 at moto (None: the environment's)."""

    s3_endpoint_url: str | None = None
    region: str = "us-east-1"
    _s3: Any = field(default=None, init=False, repr=False)

    def _s3_client(self) -> Any:
        if self._s3 is None:
            import boto3  # the local extra; only async endpoints need it

            session = boto3.session.Session(region_name=self.region)
            credentials: dict[str, str] = {}
            if self.s3_endpoint_url and session.get_credentials() is None:
                # moto's server takes any credentials; none configured must not stop a local run.
                credentials = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
            self._s3 = session.client("s3", endpoint_url=self.s3_endpoint_url, **credentials)
        return self._s3

    @staticmethod
    def _split_s3(uri: str) -> tuple[str, str]:
        parsed = urlparse(uri)
        return parsed.netloc, parsed.path.lstrip("/")

    def read(self, uri: str) -> bytes:
        """The object's bytes; StorageError when it cannot be read."""
        return self.read_with_type(uri)[0]

    def read_with_type(self, uri: str) -> tuple[bytes, str | None]:
        """The object's bytes and stored Content-Type (None for files); StorageError when unreadable."""
        check_uri(uri, what="location")
        try:
            if urlparse(uri).scheme == "s3":
                bucket, key = self._split_s3(uri)
                obj = self._s3_client().get_object(Bucket=bucket, Key=key)
                return obj["Body"].read(), obj.get("ContentType")
            return Path(unquote(urlparse(uri).path)).read_bytes(), None
        except Exception as exc:  # boto3's ClientError, OSError: report either the same way
            raise StorageError(f"could not read {uri}: {exc}") from exc

    def write(self, uri: str, data: bytes, *, content_type: str | None = None) -> None:
        """Write the whole object or nothing."""
        parsed = urlparse(uri)
        if parsed.scheme == "s3":
            bucket, key = self._split_s3(uri)
            extra = {"ContentType": content_type} if content_type else {}
            self._s3_client().put_object(Bucket=bucket, Key=key, Body=data, **extra)
            return
        path = Path(unquote(parsed.path))
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def exists(self, uri: str) -> bool:
        """True when the object is there (for pollers)."""
        parsed = urlparse(uri)
        if parsed.scheme == "s3":
            bucket, key = self._split_s3(uri)
            try:
                self._s3_client().head_object(Bucket=bucket, Key=key)
            except Exception:  # botocore ClientError 404 / NoSuchKey
                return False
            return True
        return Path(unquote(parsed.path)).is_file()
