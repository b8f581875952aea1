"""Vendoring skips, package by package, what the image installs at the same version, the endpoint's
offline install takes the vendored wheels as they are, and ``smkit package`` says what makes an archive large."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

from smkit.hosting import requirements
from smkit.packaging.manifest import ArchiveInfo, Manifest, ManifestEntry
from smkit.packaging.report import size_report
from smkit.packaging.vendor import VendorTarget, pinned_versions, vendor_wheels

LINES = "joblib==1.6.0\nthreadpoolctl==3.8.0\n"


def _model(tmp_path: Path) -> Path:
    model = tmp_path / "model"
    (model / "code").mkdir(parents=True)
    (model / "code" / "requirements.txt").write_text(LINES)
    return model


def test_a_wheel_the_image_installs_at_that_version_is_not_vendored(tmp_path: Path) -> None:
    model = _model(tmp_path)
    provided = pinned_versions(["Joblib==1.6.0", "numpy==2.4.6", "# comment", "uvicorn>=0.3"])
    assert provided == (("joblib", "1.6.0"), ("numpy", "2.4.6"))
    wheels = model / "code" / "wheels"
    kept = vendor_wheels(model / "code", wheels, target=VendorTarget(provided=provided), cache=tmp_path / "c")
    # joblib's own dependency (cloudpickle) is not in the image: it stays.
    assert kept == ["cloudpickle-3.1.3-py3-none-any.whl", "threadpoolctl-3.8.0-py3-none-any.whl"]
    assert sorted(p.name for p in wheels.iterdir()) == kept
    # Another version in the image: the archive carries the wheel the model was resolved with.
    other = vendor_wheels(
        model / "code",
        tmp_path / "w2",
        target=VendorTarget(provided=(("joblib", "1.5.0"),)),
        cache=tmp_path / "c",
    )
    assert [name.split("-")[0] for name in other] == ["cloudpickle", "joblib", "threadpoolctl"]

    # The container's offline install takes exactly the vendored wheels; joblib comes from the image
    # (here: this interpreter, which has joblib 1.6.0), as pip --target would otherwise look for it too.
    assert importlib.metadata.version("joblib") == "1.6.0"
    target = tmp_path / "installed"
    requirements.install(str(model), str(target))
    installed = sorted(p.name for p in target.iterdir() if p.name.endswith(".dist-info"))
    assert installed == ["cloudpickle-3.1.3.dist-info", "threadpoolctl-3.8.0.dist-info"]


def _manifest(*entries: tuple[str, int], archive: int | None = None) -> Manifest:
    info = ArchiveInfo("build/m/model.tar.gz", archive, "0" * 64) if archive is not None else None
    return Manifest(tuple(ManifestEntry(path, size, "0" * 64) for path, size in entries), archive=info)


def test_the_size_report_names_the_heavy_parts_and_the_fixes() -> None:
    mib = 1024 * 1024
    manifest = _manifest(
        ("model.cbm", 2 * mib),
        ("code/inference.py", 1000),
        ("code/wheels/catboost-1.2.10-cp311-cp311-manylinux2014_x86_64.whl", 99 * mib),
        ("code/wheels/pandas-3.1.1-cp311-cp311-manylinux_2_28_x86_64.whl", 12 * mib),
        archive=150 * mib,
    )
    lines = size_report(manifest)
    assert lines[1].split() == ["code/wheels/", "111.0", "MiB"]
    assert "largest vendored wheels:" in lines
    assert lines.index("  catboost-1.2.10-cp311-cp311-manylinux2014_x86_64.whl  99.0 MiB") < lines.index(
        "  pandas-3.1.1-cp311-cp311-manylinux_2_28_x86_64.whl  12.0 MiB"
    )
    warning = lines[-1]
    assert warning.startswith("warning: the archive is 150.0 MiB (over 100.0 MiB)")
    assert "image.requirements" in warning and "container/requirements-extra.txt" in warning
    assert "model_data.source: prefix" in warning
    small = size_report(_manifest(("model.joblib", 1000), archive=800))
    assert not any(line.startswith("warning") for line in small)
