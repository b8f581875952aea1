"""Where a config's paths point: relative ones are relative to the config file's folder.

The one rule for every path a config names (``model_data.path``, a ``build`` image's ``context`` and
``requirements``): the loader, the resolved deployment and the tools that write derived configs use it.
"""

from __future__ import annotations

from pathlib import Path


def absolute(path: str, base_dir: Path) -> Path:
    """``path`` as written in a config whose folder is ``base_dir`` (an absolute path stays as it is)."""
    return (base_dir / path).resolve()


def project_dir(base_dir: Path) -> Path:
    """The project a config belongs to: the folder holding ``config/`` when the config is in one (the layout of
    ``smkit init``, whose configs name ``../build/NAME/...``), else the config's own folder."""
    return base_dir.parent if base_dir.name == "config" else base_dir


def adapter_archive(base_dir: Path, name: str, component: str) -> Path:
    """Where ``smkit package --config`` writes the archive of adapter ``component``'s local folder
    (``artifact_path``) for config ``name`` in ``base_dir``, and where deploy uploads it from."""
    return project_dir(base_dir) / "build" / name / "adapters" / f"{component}.tar.gz"
