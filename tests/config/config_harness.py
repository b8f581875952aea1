"""Shared pieces of the config tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"
SHIPPED = sorted(CONFIG_DIR.glob("*.yaml"))


def raw(name: str) -> dict[str, Any]:
    """A shipped config as plain YAML data, to mutate."""
    data = yaml.safe_load((CONFIG_DIR / name).read_text())
    assert isinstance(data, dict)
    return data
