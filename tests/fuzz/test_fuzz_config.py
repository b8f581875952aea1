"""The config loader (smkit/config/loader.py) on arbitrary bytes and arbitrary YAML-shaped data.

Whatever the file holds, ``load_config`` returns a config or raises :class:`ConfigError` (whose message names
the file): never another exception. Documents are drawn both as raw bytes and as mutations of a valid
config (a random key replaced by a random value), which reach the field and cross-field rules.
"""

from __future__ import annotations

import contextlib
import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from smkit.config import ConfigError, load_config
from smkit.config.loader import parse_config

REPO = Path(__file__).resolve().parents[2]
BASE = yaml.safe_load((REPO / "config" / "realtime.yaml").read_text())

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=30)
data = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            found.extend(_paths(value, (*prefix, key)))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found.extend(_paths(value, (*prefix, i)))
    return found


PATHS = _paths(BASE)


def _replaced(path: tuple[Any, ...], value: Any) -> Any:
    doc = copy.deepcopy(BASE)
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


@pytest.fixture(scope="module")
def config_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One file for the whole run, rewritten by each case (not a folder per case)."""
    return tmp_path_factory.mktemp("cfg") / "deploy.yaml"


@given(st.binary(max_size=2000))
def test_arbitrary_bytes_are_a_config_error(config_file: Path, raw: bytes) -> None:
    path = config_file
    path.write_bytes(raw)
    try:
        load_config(path)
    except ConfigError as exc:
        assert str(path) in str(exc)


@given(st.sampled_from(PATHS), data)
def test_a_valid_config_with_one_value_replaced_loads_or_is_a_config_error(
    path: tuple[Any, ...], value: Any
) -> None:
    try:
        parse_config(_replaced(path, value), source="deploy.yaml", base_dir=REPO / "config")
    except ConfigError as exc:
        assert "deploy.yaml" in str(exc)


@given(data)
def test_arbitrary_data_is_a_config_error(value: Any) -> None:
    with contextlib.suppress(ConfigError):
        parse_config(value, source="deploy.yaml", base_dir=REPO / "config")


def test_a_file_that_is_not_utf8_or_not_a_file_is_a_config_error(tmp_path: Path) -> None:
    # Found by the fuzz test above: a UnicodeDecodeError escaped load_config.
    path = tmp_path / "deploy.yaml"
    path.write_bytes(b"name: caf\xe9\n")
    try:
        load_config(path)
    except ConfigError as exc:
        assert "deploy.yaml': is not UTF-8 text (byte 9: b'\\xe9'); save it as UTF-8" in str(exc)
    else:
        raise AssertionError("a latin-1 file loaded")
    folder = tmp_path / "folder.yaml"
    folder.mkdir()
    try:
        load_config(folder)
    except ConfigError as exc:
        assert "folder.yaml': cannot be read (Is a directory)" in str(exc)
    else:
        raise AssertionError("a folder loaded")


def test_a_path_with_a_nul_byte_is_a_config_error_naming_the_field() -> None:
    """Found by `make fuzz` (100,000 cases): os.path.realpath raised ValueError for a NUL in model_data.path."""
    doc = _replaced(("model", "containers", 0, "model_data", "path"), "\x00")
    try:
        parse_config(doc, source="deploy.yaml", base_dir=REPO / "config")
    except ConfigError as exc:
        assert "model.containers[0].model_data.path" in str(exc)
        assert "cannot hold a NUL byte" in str(exc)
    else:
        raise AssertionError("a NUL byte in a path was accepted")
