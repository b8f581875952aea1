"""Vendored wheels ship the bytecode of the modules the handler imports, and the container's install uses it.

``smkit package`` compiles, from the vendored wheel's own bytes, each module the handler check imported into a
checked-hash ``.pyc`` (``code/wheels/bytecode.cpython-311.zip``); the container's offline install puts them
next to the installed sources. Python's own import system is the judge of whether a file is used: the test
counts its calls to compile a source (``SourceLoader.source_to_code``) in a fresh interpreter.
"""

from __future__ import annotations

import importlib.util
import io
import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from smkit.hosting import requirements
from smkit.packaging import build_archive
from smkit.packaging.vendor import VendorTarget

HANDLER = """
import threadpoolctl

def model_fn(model_dir):
    return threadpoolctl.__version__

def predict_fn(data, model):
    return {"version": model}
"""
TAG = sys.implementation.cache_tag
MEMBER = f"__pycache__/threadpoolctl.{TAG}.pyc"
# Imports threadpoolctl from the folder given first on sys.path and prints what Python compiled to do it.
IMPORT = """
import importlib._bootstrap_external as external, json, sys
sys.path.insert(0, sys.argv[1])
compiled = []
original = external.SourceLoader.source_to_code
def source_to_code(self, data, path, *, _optimize=-1):
    compiled.append(path)
    return original(self, data, path, _optimize=_optimize)
external.SourceLoader.source_to_code = source_to_code
import threadpoolctl
print(json.dumps({"file": threadpoolctl.__file__, "compiled": compiled,
                  "marker": getattr(threadpoolctl, "MARKER", None)}))
"""


def _package(tmp_path: Path, name: str, cache: Path) -> Path:
    code, artifacts = tmp_path / "src" / "code", tmp_path / "src" / "artifacts"
    if not code.is_dir():
        code.mkdir(parents=True)
        artifacts.mkdir(parents=True)
        (code / "inference.py").write_text(HANDLER)
        (code / "requirements.txt").write_text("threadpoolctl==3.8.0\n")
        (artifacts / "weights.txt").write_text("1\n")
    out = tmp_path / name
    build_archive(code, artifacts, out, vendor=VendorTarget(python="3.11"), wheel_cache=cache, progress=False)
    return out


def _unpack(archive: Path, dest: Path) -> Path:
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    return dest


def _import(folder: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-I", "-B", "-c", IMPORT, str(folder)], capture_output=True, text=True, check=True
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.fixture(scope="module")
def packaged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same model packaged twice, each time with an empty cache (so compiled twice)."""
    root = tmp_path_factory.mktemp("bytecode")
    return _package(root, "first.tar.gz", root / "cache1"), _package(root, "second.tar.gz", root / "cache2")


def test_the_archive_carries_reproducible_bytecode_of_the_imported_vendored_modules(
    packaged: tuple[Path, Path],
) -> None:
    first, second = packaged
    assert first.read_bytes() == second.read_bytes()  # compiled in two processes, byte for byte the same
    with tarfile.open(first) as tar:
        names = tar.getnames()
        assert "code/wheels/threadpoolctl-3.8.0-py3-none-any.whl" in names
        member = tar.extractfile(f"code/wheels/bytecode.{TAG}.zip")
        assert member is not None
        with zipfile.ZipFile(io.BytesIO(member.read())) as bytecode:
            assert bytecode.namelist() == [MEMBER]
            data = bytecode.read(MEMBER)
    assert data[:4] == importlib.util.MAGIC_NUMBER
    assert int.from_bytes(data[4:8], "little") == 0b11  # PEP 552: hash-based, checked


def test_the_install_puts_it_beside_the_sources_and_python_uses_it_only_for_that_source(
    packaged: tuple[Path, Path], tmp_path: Path
) -> None:
    model = _unpack(packaged[0], tmp_path / "model")
    target = tmp_path / "installed"
    requirements.install(str(model), str(target))
    assert (target / MEMBER).is_file()
    used = _import(target)
    assert used["file"] == str(target / "threadpoolctl.py") and used["compiled"] == []

    # The installed source changed after the bytecode was made: Python compiles the source, never the stale file.
    source = target / "threadpoolctl.py"
    source.write_text(source.read_text() + "\nMARKER = 'edited'\n")
    stale = _import(target)
    assert stale["compiled"] == [str(source)] and stale["marker"] == "edited"


def test_a_damaged_bytecode_file_is_skipped_and_the_sources_are_compiled(
    packaged: tuple[Path, Path], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    model = _unpack(packaged[0], tmp_path / "model")
    bytecode = model / "code" / "wheels" / f"bytecode.{TAG}.zip"
    data = bytearray(bytecode.read_bytes())
    start = data.index(b"threadpoolctl") + 200  # inside the member's stored bytes: its CRC no longer holds
    data[start : start + 16] = bytes(16)
    bytecode.write_bytes(bytes(data))
    target = tmp_path / "installed"
    requirements.install(str(model), str(target))
    err = capfd.readouterr().err
    assert f"{bytecode}: bytecode not used" in err
    assert not (target / MEMBER).exists()
    used = _import(target)
    assert used["compiled"] == [str(target / "threadpoolctl.py")]


def test_a_damaged_cached_compile_is_made_again_never_shipped(
    packaged: tuple[Path, Path], capfd: pytest.CaptureFixture[str]
) -> None:
    first = packaged[0]
    cache = first.parent / "cache1"
    (cached,) = (cache / "bytecode").glob("*.zip")
    cached.write_bytes(cached.read_bytes()[:-100])  # cut short, as a full disk or a killed copy leaves it
    again = _package(first.parent, "again.tar.gz", cache)
    assert f"{cached} is damaged" in capfd.readouterr().err
    assert again.read_bytes() == first.read_bytes()
