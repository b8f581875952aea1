"""Object locations as SageMaker uses them: ``s3://bucket/key`` (AWS or moto's server, through boto3) and
``file:///absolute/path`` for local runs.

One error type, one S3 URI split, one all-or-nothing file write, one S3 client factory. Async inference
(docs/serverless-async.md), batch transform (docs/batch-transform.md), the client and the release scripts
use them. Writes are all-or-nothing: an S3 PutObject is atomic; a file is written beside its target under
a hidden name and renamed over it.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

SCHEMES = ("s3", "file")
# The object tag the deploy step (smkit.release.model_copies) sets on model copies that no live model and no
# recorded release uses; the data bucket's SupersededModelCopies lifecycle rule (smkit.cdk.constructs.storage)
# expires what carries it.
SUPERSEDED_TAG = ("smkit:superseded", "true")


class StorageError(ValueError):
    """A location that is malformed, missing, unreadable or unwritable; the message names it."""


def split_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/key/part`` -> ``("bucket", "key/part")`` (the key may be empty); StorageError otherwise."""
    if not uri.startswith("s3://") or len(uri) <= len("s3://"):
        raise StorageError(f"{uri!r} is not an s3:// URI; use s3://BUCKET/KEY")
    bucket, _, key = uri[len("s3://") :].partition("/")
    if not bucket:
        raise StorageError(f"{uri!r} has no bucket; use s3://BUCKET/KEY")
    return bucket, key


def file_uri(path: str | Path) -> str:
    """``file://`` URI of a local path (made absolute)."""
    return Path(path).resolve().as_uri()


def join(base: str, *parts: str) -> str:
    """Append key parts to an ``s3://`` or ``file://`` location."""
    cleaned = [p.strip("/") for p in parts if p and p.strip("/")]
    return "/".join([base.rstrip("/"), *cleaned])


def check_uri(uri: str, *, what: str) -> str:
    """Return ``uri`` when it is ``s3://bucket/key`` or ``file:///path``; else a StorageError naming ``what``."""
    parsed = urlparse(uri)
    if parsed.scheme == "s3" and parsed.netloc:
        return uri
    if parsed.scheme == "file" and parsed.path.startswith("/"):
        return uri
    raise StorageError(
        f"{what} {uri!r} is not supported; use s3://BUCKET/KEY (moto's server or AWS) or file:///ABSOLUTE/PATH"
    )


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# mkstemp creates 0600 files; a finished file gets the mode any new file would get.
FILE_MODE = 0o666 & ~_current_umask()


def atomic_write(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` completely or not at all (hidden temporary file, then rename)."""
    target = Path(path)
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
    return target


def s3_client(endpoint_url: str | None = None, region: str | None = None) -> Any:
    """A boto3 S3 client; pointed at moto's server by ``endpoint_url``, which takes any credentials.

    boto3 is imported here, so that runs that touch only local files do not need it.
    """
    import boto3

    session = boto3.session.Session(region_name=region)
    credentials: dict[str, str] = {}
    if endpoint_url and session.get_credentials() is None:
        # moto's server takes any credentials; none configured must not stop a local run.
        credentials = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}
    return session.client("s3", endpoint_url=endpoint_url, **credentials)


@dataclass
class Storage:
    """Reads and writes whole objects at ``s3://`` or ``file://`` locations.

    ``s3_endpoint_url`` points boto3 at moto's server (None: the environment's endpoint, i.e. AWS).
    """

    s3_endpoint_url: str | None = None
    region: str = "us-east-1"
    _s3: Any = field(default=None, init=False, repr=False)

    def _s3_client(self) -> Any:
        if self._s3 is None:
            self._s3 = s3_client(self.s3_endpoint_url, self.region)
        return self._s3

    def read(self, uri: str) -> bytes:
        """The object's bytes; StorageError when it cannot be read."""
        return self.read_with_type(uri)[0]

    def read_with_type(self, uri: str) -> tuple[bytes, str | None]:
        """The object's bytes and stored Content-Type (None for files); StorageError when unreadable."""
        check_uri(uri, what="location")
        try:
            if uri.startswith("s3://"):
                bucket, key = split_s3_uri(uri)
                obj = self._s3_client().get_object(Bucket=bucket, Key=key)
                return obj["Body"].read(), obj.get("ContentType")
            return Path(unquote(urlparse(uri).path)).read_bytes(), None
        except Exception as exc:  # boto3's ClientError, OSError: report either the same way
            raise StorageError(f"could not read {uri}: {exc}") from exc

    def write(self, uri: str, data: bytes, *, content_type: str | None = None) -> None:
        """Write the whole object or nothing."""
        check_uri(uri, what="location")
        if uri.startswith("s3://"):
            bucket, key = split_s3_uri(uri)
            extra = {"ContentType": content_type} if content_type else {}
            self._s3_client().put_object(Bucket=bucket, Key=key, Body=data, **extra)
            return
        atomic_write(unquote(urlparse(uri).path), data)

    def download(self, uri: str, dest: Path) -> list[Path]:
        """Copy an ``s3://`` object to the file ``dest``, or every object under an ``s3://.../`` prefix into
        the directory ``dest`` (keeping their relative keys); the files written. StorageError naming the
        URI when it is missing, empty or unreadable (credentials: boto3's usual chain)."""
        bucket, key = split_s3_uri(uri)
        client = self._s3_client()
        hint = (
            "check the uri and that your AWS credentials (environment, profile or SSO, as boto3 finds them) "
            "may s3:GetObject and s3:ListBucket there"
        )
        try:
            if not key.endswith("/"):
                dest.parent.mkdir(parents=True, exist_ok=True)
                client.download_file(bucket, key, str(dest))
                return [dest]
            written = []
            for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key):
                for obj in page.get("Contents", []):
                    relative = obj["Key"][len(key) :]
                    if not relative or relative.endswith("/"):
                        continue  # the folder marker a console upload leaves
                    target = dest / relative
                    target.parent.mkdir(parents=True, exist_ok=True)
                    client.download_file(bucket, obj["Key"], str(target))
                    written.append(target)
        except Exception as exc:  # botocore ClientError (404, 403), credential errors
            raise StorageError(f"could not download {uri}: {exc}; {hint}") from exc
        if not written:
            raise StorageError(f"no objects under {uri}; {hint}")
        return written

    def exists(self, uri: str) -> bool:
        """True when the object is there (for pollers)."""
        if uri.startswith("s3://"):
            bucket, key = split_s3_uri(uri)
            try:
                self._s3_client().head_object(Bucket=bucket, Key=key)
            except Exception:  # botocore ClientError 404 / NoSuchKey
                return False
            return True
        return Path(unquote(urlparse(uri).path)).is_file()
