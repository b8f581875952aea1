"""``smkit package`` / ``smkit inspect`` on the TF Serving form: SavedModels loaded and their signatures named."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from smkit.packaging import HandlerCheck, PackagingError, build_archive, inspect_archive
from smkit.packaging.savedmodel import NO_TENSORFLOW, check_saved_models

SMKIT = str(Path(sys.executable).parent / "smkit")
HANDLER = "def handler(data, context):\n    return data.read(), 'application/json'\n"


def _code(tmp: Path, text: str = HANDLER) -> Path:
    code = tmp / "code"
    code.mkdir(parents=True)
    (code / "inference.py").write_text(text)
    (code / "requirements.txt").write_text("")
    return code


def test_package_and_inspect_name_every_signature(insurance_archive: tuple[Path, str]) -> None:
    archive, packaged = insurance_archive
    signature = (
        "saved model: insurance/1 predict [predict]: (company_id int64[-1], cover_3 int64[-1], month string[-1], "
        "product_modality_id int64[-1], quotation_id int64[-1], stage_id int64[-1], year string[-1]) -> (price float[-1])"
    )
    assert "handler: tf-serving form (handler)" in packaged
    assert signature in packaged
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
        manifest = json.load(tar.extractfile("smkit-manifest.json"))  # type: ignore[arg-type]
    assert {
        "insurance/1/saved_model.pb",
        "insurance/1/variables/variables.index",
        "code/inference.py",
    } <= names
    assert manifest["handler"]["saved_models"]["insurance/1"]["serving_default"]["outputs"] == {
        "price": "float[-1]"
    }
    inspected = subprocess.run([SMKIT, "inspect", str(archive)], capture_output=True, text=True, check=True)
    assert "handler: tf-serving form (handler) passes the check" in inspected.stdout
    assert signature in inspected.stdout


def test_two_models_and_versions_are_all_checked(saved_models: Path, tmp_path: Path) -> None:
    artifacts = tmp_path / "artifacts"
    for name in ("half", "classreg", "binary"):
        shutil.copytree(saved_models / name, artifacts / name)
    manifest = build_archive(_code(tmp_path), artifacts, tmp_path / "m.tar.gz")
    assert manifest.handler is not None
    recorded = manifest.handler["saved_models"]
    assert sorted(recorded) == ["binary/1", "classreg/1", "half/1", "half/2"]
    assert recorded["classreg/1"]["serving_default"]["method"] == "tensorflow/serving/classify"
    # inspect reads the signatures back from the archive's manifest.
    report = inspect_archive(tmp_path / "m.tar.gz", handler=HandlerCheck(load_model=False))
    assert report.manifest is not None
    assert (
        "saved model: binary/1 serving_default [predict]: (image_bytes string[-1]) -> "
        "(length int32[-1], reversed_bytes string[-1])"
    ) in report.manifest.summary()


def test_a_savedmodel_that_does_not_load_is_refused_by_name(saved_models: Path, tmp_path: Path) -> None:
    artifacts = tmp_path / "artifacts"
    shutil.copytree(saved_models / "half" / "1", artifacts / "half" / "1")
    (artifacts / "half" / "1" / "variables" / "variables.index").write_bytes(b"not an index")
    with pytest.raises(PackagingError) as caught:
        build_archive(_code(tmp_path), artifacts, tmp_path / "m.tar.gz")
    assert str(artifacts / "half" / "1") in str(caught.value)
    assert "cannot load this SavedModel" in str(caught.value)
    assert not (tmp_path / "m.tar.gz").exists()


def test_a_savedmodel_outside_a_version_folder_is_refused(saved_models: Path, tmp_path: Path) -> None:
    artifacts = tmp_path / "artifacts"
    shutil.copytree(saved_models / "half" / "1", artifacts / "half" / "latest")
    with pytest.raises(PackagingError, match="not in a numeric version directory"):
        build_archive(_code(tmp_path), artifacts, tmp_path / "m.tar.gz")


def test_without_tensorflow_the_load_is_skipped_with_a_warning(saved_models: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    reports, warnings = check_saved_models(saved_models, python=str(venv / "bin" / "python"), timeout_s=60)
    assert (reports, warnings) == ((), (NO_TENSORFLOW,))
