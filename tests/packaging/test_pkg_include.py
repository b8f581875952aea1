"""``smkit package --include``: helper files shared by several models, copied into each archive's ``code/``."""

from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from pkg_harness import MODEL_CODE, Model, Trained

from smkit.cli import main
from smkit.packaging import PackagingError, build_archive, check_handler

HELPER = "SCALE = 2.0\n"
HANDLER_USING_HELPER = """\
import helper


def model_fn(model_dir):
    return helper.SCALE


def transform_fn(model, data, content_type, accept):
    return str(model), "text/plain"
"""


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    path = tmp_path / "shared" / "helper.py"
    path.parent.mkdir()
    path.write_text(HELPER)
    return path


def test_included_file_ships_in_code_and_the_check_imports_it(tiny: Model, shared: Path) -> None:
    tiny.write("inference.py", HANDLER_USING_HELPER)
    out = tiny.out / "model.tar.gz"
    manifest = build_archive(tiny.code, tiny.artifacts, out, include=[shared])
    with tarfile.open(out) as tar:
        assert tar.extractfile("code/helper.py").read().decode() == HELPER  # type: ignore[union-attr]
    assert "code/helper.py" in {entry.path for entry in manifest.entries}
    assert not (tiny.code / "helper.py").exists()  # the user's folder is left as it was
    again = build_archive(tiny.code, tiny.artifacts, tiny.out / "again.tar.gz", include=[shared])
    assert again.archive is not None and manifest.archive is not None
    assert again.archive.sha256 == manifest.archive.sha256


def test_without_the_include_the_check_names_the_missing_module(tiny: Model) -> None:
    tiny.write("inference.py", HANDLER_USING_HELPER)
    with pytest.raises(PackagingError, match="No module named 'helper'"):
        build_archive(tiny.code, tiny.artifacts, tiny.out / "model.tar.gz")
    assert tiny.outputs() == []


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda root, code: root / "missing.py", "is not a regular file"),
        (lambda root, code: root, "is not a regular file"),
        (lambda root, code: _link(root), "is not a regular file"),
        (lambda root, code: _copy_of(code / "inference.py", root), "code/inference.py is there already"),
    ],
    ids=["missing", "folder", "symlink", "replaces a code file"],
)
def test_bad_include_is_refused_with_no_output(tiny: Model, tmp_path: Path, make, problem: str) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "inc"
    root.mkdir()
    path = make(root, tiny.code)
    with pytest.raises(PackagingError) as caught:
        build_archive(tiny.code, tiny.artifacts, tiny.out / "model.tar.gz", include=[path])
    assert str(caught.value).startswith(f"included file {path}: {problem}")
    assert tiny.outputs() == []


def test_two_includes_with_one_name_are_refused(tiny: Model, tmp_path: Path, shared: Path) -> None:
    other = tmp_path / "other" / "helper.py"
    other.parent.mkdir()
    other.write_text(HELPER)
    with pytest.raises(PackagingError, match=r"code/helper.py is there already; rename one of the two"):
        build_archive(tiny.code, tiny.artifacts, tiny.out / "model.tar.gz", include=[shared, other])


def test_errors_in_an_included_file_name_the_file_not_its_staged_copy(tiny: Model, shared: Path) -> None:
    tiny.write("inference.py", HANDLER_USING_HELPER)
    shared.write_text("SCALE = (\n")
    with pytest.raises(PackagingError) as caught:
        build_archive(tiny.code, tiny.artifacts, tiny.out / "model.tar.gz", include=[shared])
    message = str(caught.value)
    assert str(shared) in message and "smkit-code-" not in message
    assert tiny.outputs() == []


def test_cli_include_option(tiny: Model, shared: Path) -> None:
    tiny.write("inference.py", HANDLER_USING_HELPER)
    out = tiny.out / "model.tar.gz"
    args = ["package", "--code", str(tiny.code), "--artifacts", str(tiny.artifacts)]
    result = CliRunner().invoke(main, [*args, "--include", str(shared), "--output", str(out)])
    assert result.exit_code == 0, result.output
    assert "code/helper.py" in result.output


def test_check_handler_reports_the_loaded_model(trained: Trained, tmp_path: Path) -> None:
    """The iris example's code/ as its archive holds it: its own files plus the shared table_io.py."""
    code = tmp_path / "code"
    shutil.copytree(trained.code("iris"), code)
    shutil.copy2(MODEL_CODE / "shared" / "table_io.py", code)
    report = check_handler(code, trained.artifacts["iris"])
    assert report.form == "toolkit"
    assert report.model_type == "sklearn.linear_model._logistic.LogisticRegression"
    assert report.unsatisfied == () and report.warnings == ()


def _link(root: Path) -> Path:
    target = root / "target.py"
    target.write_text(HELPER)
    link = root / "link.py"
    os.symlink(target, link)
    return link


def _copy_of(source: Path, root: Path) -> Path:
    dest = root / source.name
    shutil.copy2(source, dest)
    return dest
