"""`inspect_archive` and `safe_extract`: listing, re-validation, and refusal of unsafe or altered archives."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from pkg_harness import Model

from smkit.archive import ArchiveError, safe_extract
from smkit.packaging import PackagingError, build_archive, inspect_archive


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _info(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.mode = 0o644
    return info


def _rewrite(src: Path, dest: Path, change: dict[str, bytes]) -> Path:
    """Copy an archive, replacing the content of the named members."""
    with tarfile.open(src, "r:gz") as tar:
        members = [(m, change.get(m.name, tar.extractfile(m).read() if m.isreg() else None)) for m in tar]  # type: ignore[union-attr]
    return _tar(dest, members)


def test_inspect_lists_and_revalidates(tiny: Model) -> None:
    out = tiny.out / "model.tar.gz"
    built = build_archive(tiny.code, tiny.artifacts, out)
    report = inspect_archive(out)
    names = [m.name for m in report.members]
    assert names[-1] == "smkit-manifest.json" and "code/inference.py" in names
    assert report.manifest is not None and report.manifest.entries == built.entries
    assert report.handler is not None and report.handler.form == "toolkit"
    summary = report.summary()
    assert "manifest: 4 files match their size and sha256" in summary
    assert "handler: toolkit form (input_fn, model_fn, output_fn, predict_fn) passes the check" in summary
    assert report.warnings == ()


def test_inspect_without_handler_check_streams_only(tiny: Model) -> None:
    out = tiny.out / "model.tar.gz"
    build_archive(tiny.code, tiny.artifacts, out)
    report = inspect_archive(out, handler_check=False)
    assert report.handler is None
    files = {m.name: m for m in report.members if not m.is_dir}
    assert files["weights.txt"].sha256 is not None and files["weights.txt"].size == 4


def test_inspect_detects_altered_content(tiny: Model, tmp_path: Path) -> None:
    out = tiny.out / "model.tar.gz"
    build_archive(tiny.code, tiny.artifacts, out)
    altered = _rewrite(out, tmp_path / "altered.tar.gz", {"weights.txt": b"9.9\n"})
    with pytest.raises(
        PackagingError, match=r"altered.tar.gz: weights.txt: size/sha256 .* differ from the manifest"
    ):
        inspect_archive(altered)


def test_inspect_reports_handler_problems_with_archive_names(tmp_path: Path) -> None:
    archive = _tar(
        tmp_path / "broken.tar.gz",
        [(_info("code/inference.py"), b"import os\nx = (\n"), (_info("code/requirements.txt"), b"")],
    )
    with pytest.raises(PackagingError) as caught:
        inspect_archive(archive)
    message = str(caught.value)
    assert message.startswith(f"{archive}:code/inference.py line 2: ")
    assert "fix the syntax error" in message
    assert "smkit-inspect-" not in message


def test_inspect_foreign_archive_without_manifest(tiny: Model, tmp_path: Path) -> None:
    source = (tiny.code / "inference.py").read_bytes()
    archive = _tar(
        tmp_path / "foreign.tar.gz",
        [
            (_info("./code/inference.py"), source),
            (_info("./code/requirements.txt"), b""),
            (_info("./weights.txt"), b"2.0\n"),
        ],
    )
    report = inspect_archive(archive)
    assert report.manifest is None
    assert report.warnings[0].startswith("no smkit-manifest.json")
    assert [m.name for m in report.members] == ["code/inference.py", "code/requirements.txt", "weights.txt"]


def test_inspect_layout_requires_code(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "weights-only.tar.gz", [(_info("weights.txt"), b"1")])
    with pytest.raises(
        PackagingError, match="weights-only.tar.gz: code/inference.py: missing from the archive"
    ):
        inspect_archive(archive, handler_check=False)


def test_inspect_bad_manifest(tmp_path: Path) -> None:
    archive = _tar(
        tmp_path / "bad-manifest.tar.gz",
        [
            (_info("code/inference.py"), b""),
            (_info("code/requirements.txt"), b""),
            (_info("smkit-manifest.json"), b"{"),
        ],
    )
    with pytest.raises(PackagingError, match="manifest.json: not a valid manifest"):
        inspect_archive(archive, handler_check=False)
    wrong = json.dumps({"format": "other/9", "files": []}).encode()
    archive = _tar(tmp_path / "other.tar.gz", [(_info("smkit-manifest.json"), wrong)])
    with pytest.raises(
        PackagingError, match=r"manifest.json: format: 'other/9' is not 'smkit.model-archive/1'"
    ):
        inspect_archive(archive, handler_check=False)


UNSAFE = [
    ("absolute name", [(_info("/etc/evil"), b"x")], "member '/etc/evil': absolute name"),
    ("dot-dot name", [(_info("code/../../evil"), b"x")], "member 'code/../../evil': '..' component"),
    (
        "symlink",
        [(_info("weights", tarfile.SYMTYPE, "/etc/passwd"), None)],
        "-> '/etc/passwd': is a symbolic link",
    ),
    (
        "hard link",
        [(_info("a"), b"x"), (_info("b", tarfile.LNKTYPE, "a"), None)],
        "member 'b' -> 'a': is a hard link",
    ),
    ("device", [(_info("dev", tarfile.CHRTYPE), None)], "member 'dev': is a character device"),
    ("fifo", [(_info("pipe", tarfile.FIFOTYPE), None)], "member 'pipe': is a FIFO"),
    ("duplicate", [(_info("w"), b"1"), (_info("./w"), b"2")], "member 'w': appears twice"),
]


@pytest.mark.parametrize(("members", "expect"), [c[1:] for c in UNSAFE], ids=[c[0] for c in UNSAFE])
def test_unsafe_members_refused(tmp_path: Path, members: list, expect: str) -> None:  # type: ignore[type-arg]
    archive = _tar(tmp_path / "evil.tar.gz", members)
    dest = tmp_path / "model"
    with pytest.raises(ArchiveError, match=expect.replace("(", r"\(").replace(")", r"\)")) as caught:
        safe_extract(archive, dest)
    assert caught.value.fix
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evil.tar.gz"]
    with pytest.raises(PackagingError, match="evil.tar.gz"):
        inspect_archive(archive)


def test_safe_extract_round_trip(tiny: Model, tmp_path: Path) -> None:
    out = tiny.out / "model.tar.gz"
    manifest = build_archive(tiny.code, tiny.artifacts, out)
    dest = tmp_path / "opt" / "ml" / "model"
    dest.mkdir(parents=True)  # an empty destination is fine
    members = safe_extract(out, dest)
    assert (dest / "weights.txt").read_text() == "1.5\n"
    assert (dest / "code" / "inference.py").read_bytes() == (tiny.code / "inference.py").read_bytes()
    hashes = {m.name: m.sha256 for m in members if not m.is_dir}
    assert all(hashes[e.path] == e.sha256 for e in manifest.entries)
    with pytest.raises(ArchiveError, match="destination exists and is not an empty directory"):
        safe_extract(out, dest)


def test_safe_extract_refuses_non_archives(tmp_path: Path) -> None:
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(ArchiveError, match="junk.tar.gz: the archive is damaged or truncated"):
        safe_extract(junk, tmp_path / "out")
    with pytest.raises(ArchiveError, match="no such archive file"):
        safe_extract(tmp_path / "missing.tar.gz", tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junk.tar.gz"]


def test_damaged_archives_are_refused_cleanly(tiny: Model, tmp_path: Path) -> None:
    (tiny.artifacts / "noise.bin").write_bytes(bytes(range(256)) * 4000)
    out = tiny.out / "model.tar.gz"
    build_archive(tiny.code, tiny.artifacts, out)
    raw = out.read_bytes()
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(raw[: len(raw) // 2])
    corrupt = tmp_path / "corrupt.tar.gz"
    corrupt.write_bytes(raw[:-8] + bytes(8))  # CRC and length trailer zeroed
    for archive in (truncated, corrupt):
        with pytest.raises(PackagingError, match="the archive is damaged or truncated"):
            inspect_archive(archive)
        with pytest.raises(ArchiveError, match="the archive is damaged or truncated"):
            safe_extract(archive, tmp_path / "dest")
    assert not (tmp_path / "dest").exists()


def test_file_and_folder_with_one_name_is_refused(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "clash.tar.gz", [(_info("a"), b"x"), (_info("a/b"), b"y")])
    with pytest.raises(ArchiveError, match="member 'a/b': cannot be written"):
        safe_extract(archive, tmp_path / "dest")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clash.tar.gz"]
