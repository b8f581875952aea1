"""Building archives: reproducibility, layout, normalised headers, manifest, uncompressed mode, TF-Serving."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import platform
import struct
import tarfile
from importlib import metadata
from pathlib import Path

import pytest
from pkg_harness import MODEL_CODE, Model, Trained

from smkit.packaging import HandlerCheck, build_archive, check_handler
from smkit.packaging.manifest import Manifest


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_rebuild_is_byte_identical(trained: Trained, tmp_path: Path) -> None:
    code, artifacts = trained.code("tabular"), trained.artifacts["tabular"]
    shared = [MODEL_CODE / "shared" / "table_io.py"]
    first = build_archive(code, artifacts, tmp_path / "a" / "model.tar.gz", include=shared, threads=2)
    second = build_archive(code, artifacts, tmp_path / "b" / "model.tar.gz", include=shared, threads=1)
    assert first.archive is not None and second.archive is not None
    assert first.archive.sha256 == second.archive.sha256
    assert (tmp_path / "a" / "model.tar.gz").read_bytes() == (tmp_path / "b" / "model.tar.gz").read_bytes()
    checked_with = first.handler.pop("checked_with")
    assert first.handler == {
        "form": "toolkit",
        "hooks": ["input_fn", "model_fn", "output_fn", "predict_fn"],
        "requirements": (MODEL_CODE / "tabular" / "code" / "requirements.txt").read_text().split(),
    }
    # The archive records what the handler was checked with: this interpreter and its exact versions.
    assert checked_with["python"] == platform.python_version()
    assert checked_with["packages"]["numpy"] == metadata.version("numpy")
    assert checked_with["packages"]["scikit-learn"] == metadata.version("scikit-learn")
    with tarfile.open(tmp_path / "a" / "model.tar.gz") as archive:
        member = archive.extractfile("smkit-manifest.json")
        assert member is not None
        stored = Manifest.from_json(member.read(), label="smkit-manifest.json")
    assert stored.handler is not None and stored.handler["checked_with"] == checked_with
    assert f"numpy=={metadata.version('numpy')}" in stored.summary()


def test_rebuild_after_touching_files_is_identical(tiny: Model) -> None:
    out = tiny.out / "model.tar.gz"
    build_archive(tiny.code, tiny.artifacts, out)
    before = _digest(out)
    os.utime(tiny.artifacts / "weights.txt", (1, 1))
    os.chmod(tiny.artifacts / "weights.txt", 0o600)
    (tiny.code / "__pycache__").mkdir()
    (tiny.code / "__pycache__" / "inference.cpython-311.pyc").write_bytes(b"cache")
    build_archive(tiny.code, tiny.artifacts, out)
    assert _digest(out) == before
    assert tiny.outputs() == ["model.tar.gz"]


def test_layout_headers_and_manifest(tiny: Model) -> None:
    (tiny.code / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(tiny.code / "run.sh", 0o700)
    (tiny.artifacts / "alias.txt").symlink_to("weights.txt")  # inside the tree: stored as a file
    big = os.urandom(3 << 20)  # several read chunks
    (tiny.artifacts / "sub" / "big.bin").write_bytes(big)
    out = tiny.out / "model.tar.gz"
    manifest = build_archive(tiny.code, tiny.artifacts, out)

    raw = out.read_bytes()
    magic, method, flags, mtime = struct.unpack("<HBBI", raw[:8])
    assert (magic, method, flags, mtime) == (0x8B1F, 8, 0, 0)  # gzip header: no name, no timestamp
    with tarfile.open(out, "r:gz") as tar:
        members = tar.getmembers()
        names = [m.name for m in members]
        assert names == [
            "alias.txt",
            "code",
            "code/inference.py",
            "code/requirements.txt",
            "code/run.sh",
            "sub",
            "sub/big.bin",
            "sub/extra.bin",
            "weights.txt",
            "smkit-manifest.json",
        ]
        for m in members:
            assert (m.mtime, m.uid, m.gid, m.uname, m.gname) == (0, 0, 0, "", "")
            assert m.isdir() or m.isreg()
        modes = {m.name: m.mode for m in members}
        assert modes["code"] == modes["sub"] == modes["code/run.sh"] == 0o755
        assert modes["weights.txt"] == modes["code/inference.py"] == 0o644
        extracted = tar.extractfile("sub/big.bin")
        assert extracted is not None and extracted.read() == big
        stored = tar.extractfile("smkit-manifest.json")
        assert stored is not None
        data = json.loads(stored.read())
    assert data["format"] == "smkit.model-archive/1"
    files = {f["path"]: f for f in data["files"]}
    assert set(files) == {n for n in names if n not in {"code", "sub", "smkit-manifest.json"}}
    assert files["sub/big.bin"] == {
        "path": "sub/big.bin",
        "size": len(big),
        "sha256": hashlib.sha256(big).hexdigest(),
    }
    assert files["alias.txt"]["sha256"] == files["weights.txt"]["sha256"]
    assert data["total_size"] == sum(f["size"] for f in data["files"])
    assert [e.path for e in manifest.entries] == [f["path"] for f in data["files"]]
    assert gzip.decompress(raw)[-1024:] == bytes(1024)  # tar end-of-archive blocks

    summary = manifest.summary()
    assert str(out) in summary and "handler: toolkit form" in summary
    assert hashlib.sha256(big).hexdigest() in summary


def test_uncompressed_layout_matches_archive(tiny: Model) -> None:
    out, flat = tiny.out / "model.tar.gz", tiny.out / "flat"
    manifest = build_archive(tiny.code, tiny.artifacts, out, uncompressed=flat)
    assert manifest.uncompressed_dir == str(flat)
    on_disk = sorted(p.relative_to(flat).as_posix() for p in flat.rglob("*") if p.is_file())
    with tarfile.open(out, "r:gz") as tar:
        in_tar = sorted(m.name for m in tar.getmembers() if m.isreg())
        assert on_disk == in_tar
        for name in in_tar:
            member = tar.extractfile(name)
            assert member is not None and member.read() == (flat / name).read_bytes()
    assert (flat / "code" / "inference.py").stat().st_mode & 0o777 == 0o644
    # Rebuilding into an earlier uncompressed build replaces it; only the layout is written.
    (tiny.artifacts / "weights.txt").write_text("2.5\n")
    build_archive(tiny.code, tiny.artifacts, None, uncompressed=flat)
    assert (flat / "weights.txt").read_text() == "2.5\n"
    assert tiny.outputs() == ["flat", "model.tar.gz"]


def test_tf_serving_form_with_saved_model(tiny: Model) -> None:
    tiny.write(
        "inference.py",
        "def input_handler(data, context):\n    return data\n\n\n"
        "def output_handler(data, context):\n    return data.content, context.accept_header\n",
    )
    version = tiny.artifacts / "my_model" / "1"
    version.mkdir(parents=True)
    (version / "saved_model.pb").write_bytes(b"\x08\x01")
    (version / "variables").mkdir()
    # A stand-in saved_model.pb: the layout and hooks are checked, loading it is not (tests/tfs does that).
    manifest = build_archive(
        tiny.code, tiny.artifacts, tiny.out / "model.tar.gz", handler=HandlerCheck(load_model=False)
    )
    assert manifest.handler is not None
    assert manifest.handler["form"] == "tf-serving"
    assert manifest.handler["hooks"] == ["input_handler", "output_handler"]
    assert "my_model/1/saved_model.pb" in {e.path for e in manifest.entries}


def test_documented_missing_model_fn_and_context_arity(tiny: Model) -> None:
    tiny.write(
        "inference.py",
        'NO_MODEL_FN_REASON = "the framework image loads model.pt itself"\n\n\n'
        "def transform_fn(model, data, content_type, accept, context):\n    return data, accept\n",
    )
    manifest = build_archive(tiny.code, tiny.artifacts, tiny.out / "model.tar.gz")
    assert manifest.handler is not None and "checked_with" in manifest.handler
    recorded = {key: value for key, value in manifest.handler.items() if key != "checked_with"}
    assert recorded == {"form": "toolkit", "hooks": ["transform_fn"], "requirements": []}
    report = check_handler(tiny.code, tiny.artifacts)
    assert report.no_model_fn_reason == "the framework image loads model.pt itself"


def test_unsatisfied_requirements_are_warnings_when_the_import_works(tiny: Model) -> None:
    tiny.write("requirements.txt", "# pinned for the image\nsmkit-no-such-dist==1.0  # comment\n\n")
    manifest = build_archive(tiny.code, tiny.artifacts, tiny.out / "model.tar.gz")
    assert manifest.warnings == (
        "not installed here (installed at container start): smkit-no-such-dist==1.0 (not installed)",
    )
    assert manifest.handler is not None and manifest.handler["requirements"] == ["smkit-no-such-dist==1.0"]


def test_progress_bar_does_not_change_the_archive(tiny: Model, capsys: pytest.CaptureFixture[str]) -> None:
    quiet = build_archive(tiny.code, tiny.artifacts, tiny.out / "a.tar.gz", progress=False)
    shown = build_archive(tiny.code, tiny.artifacts, tiny.out / "b.tar.gz", progress=True)
    assert "B/s" in capsys.readouterr().err
    assert quiet.archive is not None and shown.archive is not None
    assert quiet.archive.sha256 == shown.archive.sha256
