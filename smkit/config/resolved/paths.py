"""Where a config's paths point: relative ones are relative to the config file's folder.

The one rule for every path a config names (``model_data.path``, a ``build`` image's ``context`` and
``requirements``): the loader, the resolved deployment and the tools that write derived configs use it.
"""

from __future__ import annotations

from pathlib import Path


def absolute(path: str, base_dir: Path) -> Path:
    """``path`` as written in a config whose folder is ``base_dir`` (an absolute path stays as it is)."""
    return (base_dir / path).resolve()
