"""Input listing and all-or-nothing output writing for local folders (S3 is covered against moto)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from smkit.batch.objects import LocalSink, StorageError, check_separate, list_inputs, open_sink
from smkit.batch.options import CompressionType
from smkit.object_store import split_s3_uri


def test_folder_inputs_are_sorted_relative_names_without_hidden_files(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / ".cache").mkdir()
    for rel in ("b.csv", "a.csv", "sub/c.csv", ".hidden.csv", ".cache/x.csv"):
        (tmp_path / rel).write_text(rel)
    objects = list_inputs(str(tmp_path), compression=CompressionType.NONE)
    assert [o.name for o in objects] == ["a.csv", "b.csv", "sub/c.csv"]
    assert objects[2].read() == b"sub/c.csv"
    single = list_inputs(str(tmp_path / "sub" / "c.csv"), compression=CompressionType.NONE)
    assert [(o.name, o.uri) for o in single] == [("c.csv", str(tmp_path / "sub" / "c.csv"))]


def test_gzip_input_that_is_not_gzip_names_the_object_and_the_fix(tmp_path: Path) -> None:
    (tmp_path / "plain.jsonl").write_text('{"value":1}\n')
    (obj,) = list_inputs(str(tmp_path), compression=CompressionType.GZIP)
    with pytest.raises(StorageError, match=r"plain\.jsonl is not gzip data .*use CompressionType None"):
        obj.read()


def test_local_sink_writes_whole_files_with_the_usual_mode(tmp_path: Path) -> None:
    sink = open_sink(str(tmp_path / "out"))
    assert isinstance(sink, LocalSink)
    written = sink.write("sub/x.csv.out", b"1\n2\n")
    assert Path(written).read_bytes() == b"1\n2\n"
    assert sorted(os.listdir(tmp_path / "out" / "sub")) == ["x.csv.out"]  # no temporary file left
    umask = os.umask(0)
    os.umask(umask)
    assert Path(written).stat().st_mode & 0o777 == 0o666 & ~umask
    assert sink.discard("sub/x.csv.out") is True
    assert sink.discard("sub/x.csv.out") is False
    (tmp_path / "file").write_text("x")
    with pytest.raises(StorageError, match="is a file; give a folder"):
        open_sink(str(tmp_path / "file"))


def test_locations_must_be_separate_and_s3_uris_well_formed(tmp_path: Path) -> None:
    check_separate(str(tmp_path / "in"), str(tmp_path / "out"))
    check_separate("s3://b/in/", "s3://b/out/")
    check_separate(str(tmp_path), "s3://b/in/")
    with pytest.raises(StorageError, match="is inside input location"):
        check_separate("s3://b/in", "s3://b/in/out")
    with pytest.raises(StorageError, match="is inside input location"):
        check_separate(str(tmp_path), str(tmp_path))
    assert split_s3_uri("s3://bucket/a/b") == ("bucket", "a/b")
    with pytest.raises(StorageError, match="has no bucket"):
        split_s3_uri("s3:///key")
    with pytest.raises(StorageError, match="is not an s3:// URI"):
        split_s3_uri("https://bucket/key")
