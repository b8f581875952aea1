"""The sha256 of a file, standard library only: worker interpreters import it too (they may lack isal)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: str | Path) -> str:
    """The hex sha256 of a file's bytes, read in chunks (the manifest's, the caches' and the runtime's hash)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()
