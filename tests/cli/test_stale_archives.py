"""An archive older than its model_code sources is found, naming the file (smkit.project), for synth,
deploy and the local endpoint to package it again; the layout maps build/NAME/model.tar.gz to model_code/NAME."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from smkit.config import load_deployment
from smkit.project import STAMP_NAME, model_dir_of, project_models, samples_dir

SETTINGS = {"image": "the kit's image", "python": "3.11", "network_isolation": True}


def _project(tmp_path: Path) -> Path:
    code = tmp_path / "model_code" / "churn" / "code"
    code.mkdir(parents=True)
    (code / "inference.py").write_text("def model_fn(d):\n    return d\n")
    (tmp_path / "model_code" / "churn" / "artifacts").mkdir()
    (tmp_path / "model_code" / "churn" / "artifacts" / "model.joblib").write_bytes(b"weights")
    (tmp_path / "config").mkdir()
    config = yaml.safe_load((Path(__file__).resolve().parents[2] / "config" / "realtime.yaml").read_text())
    config["name"] = "churn"
    config["model"]["containers"][0]["name"] = "main"
    config["model"]["containers"][0]["model_data"]["path"] = "../build/churn/model.tar.gz"
    (tmp_path / "config" / "churn.yaml").write_text(yaml.safe_dump(config))
    return tmp_path


def test_the_archive_of_a_config_comes_from_its_model_code_folder(tmp_path: Path) -> None:
    root = _project(tmp_path)
    deployment = load_deployment(root / "config" / "churn.yaml")
    (model,) = project_models(deployment)
    assert (model.name, model.model_dir, model.containers) == (
        "churn",
        root / "model_code" / "churn",
        ("main",),
    )
    assert model.archive == root / "build" / "churn" / "model.tar.gz"
    assert samples_dir(deployment, "main", root) == root / "model_code" / "churn" / "samples"
    assert model_dir_of(root / "build" / "other" / "model.tar.gz") is None
    assert model_dir_of(root / "build" / "model.tar.gz") is None


def test_a_changed_added_or_removed_source_or_setting_makes_it_stale(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (model,) = project_models(load_deployment(root / "config" / "churn.yaml"))
    assert model.stale(SETTINGS) == f"{model.archive} does not exist yet"
    model.archive.parent.mkdir(parents=True)
    model.archive.write_bytes(b"archive")
    model.record(SETTINGS)
    assert (model.archive.parent / STAMP_NAME).is_file() and model.stale(SETTINGS) is None
    handler = model.model_dir / "code" / "inference.py"
    handler.write_text("def model_fn(d):\n    return 1\n")
    assert model.stale(SETTINGS) == f"{handler} changed since {model.archive} was built"
    model.record(SETTINGS)
    helper = model.model_dir / "code" / "features.py"
    helper.write_text("X = 1\n")
    assert model.stale(SETTINGS) == f"{helper} was added since {model.archive} was built"
    helper.unlink()
    assert model.stale(SETTINGS) is None
    (model.model_dir / "artifacts" / "model.joblib").unlink()
    assert "artifacts/model.joblib was removed" in (model.stale(SETTINGS) or "")
    (model.model_dir / "artifacts" / "model.joblib").write_bytes(b"weights")
    model.record(SETTINGS)
    assert (
        model.stale({**SETTINGS, "python": "3.12"})
        == "python is now '3.12' (the archive was built with '3.11')"
    )


def test_without_a_record_a_source_newer_than_the_archive_is_named(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (model,) = project_models(load_deployment(root / "config" / "churn.yaml"))
    model.archive.parent.mkdir(parents=True)
    model.archive.write_bytes(b"built by hand")
    handler = model.model_dir / "code" / "inference.py"
    past = model.archive.stat().st_mtime_ns - 10**9
    for path in (handler, model.model_dir / "artifacts" / "model.joblib"):
        os.utime(path, ns=(past, past))
    assert model.stale(SETTINGS) is None
    os.utime(handler, ns=(past + 2 * 10**9, past + 2 * 10**9))
    assert model.stale(SETTINGS) == f"{handler} is newer than {model.archive}"
