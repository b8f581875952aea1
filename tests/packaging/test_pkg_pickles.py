"""The pickle check of `smkit package`: what a model file would import is read without loading it.

Real files written by joblib, pickle and NumPy in the test: a file whose pickle imports ``os.system`` is
refused (naming the file and the global), in every container joblib writes, and nothing is loaded or written;
scikit-learn and NumPy models pass; an allow entry in the config lets a named global through and is recorded
in the manifest.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import sys
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from pkg_harness import REPO, Model
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from smkit.cli import main
from smkit.config import ConfigError, load_config
from smkit.packaging import PackagingError, build_archive
from smkit.pickle_allow import Allow
from smkit.pickle_scan import Global, ScanError, scan_file

JOBLIB_HANDLER = """\
import os

import joblib


def model_fn(model_dir):
    return joblib.load(os.path.join(model_dir, "model.joblib"))


def predict_fn(data, model):
    return data
"""


class Command:
    """Pickles as ``os.system(command)``: what loading the file would run."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.system, (self.command,))


def _marker_command(model: Model) -> tuple[Command, Path]:
    marker = model.out.parent / "loaded-it"
    return Command(f"touch {marker}"), marker


def _joblib_model(model: Model) -> None:
    model.write("inference.py", JOBLIB_HANDLER)
    model.write("requirements.txt", "")


def _build(model: Model, **kwargs: Any) -> Any:
    return build_archive(model.code, model.artifacts, model.out / "model.tar.gz", **kwargs)


def _package_cli(model: Model, *extra: str) -> tuple[int, str, str]:
    argv = ["package", "--code", str(model.code), "--artifacts", str(model.artifacts)]
    argv += ["--output", str(model.out / "model.tar.gz"), "--python", sys.executable, *extra]
    result = CliRunner().invoke(main, argv)
    return result.exit_code, result.stdout, result.stderr


def test_smkit_package_refuses_a_joblib_file_that_imports_os_system(tiny: Model) -> None:
    _joblib_model(tiny)
    evil, marker = _marker_command(tiny)
    joblib.dump({"weights": np.arange(10.0), "hook": evil}, tiny.artifacts / "model.joblib")
    code, stdout, stderr = _package_cli(tiny)
    assert code == 1 and stdout == ""
    error = next(line for line in stderr.splitlines() if line.startswith("error: "))
    assert f"{tiny.artifacts / 'model.joblib'} (model.joblib in the archive)" in error
    assert "imports posix.system (os.system), which no allow entry covers" in error
    assert (
        "safetensors" in error
        and "ONNX" in error
        and "'posix.system' to security.artifacts.allow_globals" in error
    )
    assert not marker.exists(), "the file was loaded: the check must come before the handler check"
    assert tiny.outputs() == []


WRITERS: dict[str, Callable[[Path, Any], None]] = {
    "joblib after an array": lambda p, evil: joblib.dump([np.zeros((300, 300)), evil], p),
    "joblib zlib": lambda p, evil: joblib.dump([np.arange(5), evil], p, compress=("zlib", 3)),
    "joblib gzip": lambda p, evil: joblib.dump([np.arange(5), evil], p, compress=("gzip", 3)),
    "joblib bz2": lambda p, evil: joblib.dump([np.arange(5), evil], p, compress=("bz2", 3)),
    "joblib xz": lambda p, evil: joblib.dump([np.arange(5), evil], p, compress=("xz", 3)),
    "joblib lzma": lambda p, evil: joblib.dump([np.arange(5), evil], p, compress=("lzma", 3)),
    "joblib object array": lambda p, evil: joblib.dump(np.array(["a", evil], dtype=object), p),
    "pickle protocol 0": lambda p, evil: p.write_bytes(pickle.dumps(evil, protocol=0)),
    "pickle protocol 5": lambda p, evil: p.write_bytes(pickle.dumps([np.arange(3), evil], protocol=5)),
    "second pickle": lambda p, evil: p.write_bytes(
        pickle.dumps(1, protocol=4) + pickle.dumps(evil, protocol=4)
    ),
}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_every_container_joblib_and_pickle_write_is_read_to_its_globals(writer: str, tiny: Model) -> None:
    evil, marker = _marker_command(tiny)
    WRITERS[writer](tiny.artifacts / "model.joblib", evil)
    with pytest.raises(PackagingError, match=r"imports posix\.system \(os\.system\)"):
        _build(tiny)
    assert not marker.exists() and tiny.outputs() == []


def test_object_arrays_in_npy_and_npz_files_and_zip_members_are_scanned(tiny: Model) -> None:
    evil, _ = _marker_command(tiny)
    np.savez(tiny.artifacts / "arrays.npz", x=np.arange(3), y=np.array([evil], dtype=object))
    with pytest.raises(PackagingError, match=r"arrays\.npz.*its pickle \(in y\.npy\) imports posix\.system"):
        _build(tiny)
    (tiny.artifacts / "arrays.npz").unlink()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:  # torch.save's layout: archive/data.pkl
        zf.writestr("archive/data.pkl", pickle.dumps(evil, protocol=2))
        zf.writestr("archive/data/0", b"\0" * 16)
    (tiny.artifacts / "model.pt").write_bytes(buffer.getvalue())
    with pytest.raises(PackagingError, match=r"model\.pt.*\(in archive/data\.pkl\) imports posix\.system"):
        _build(tiny)


def test_a_file_that_cannot_be_read_to_the_end_is_refused(tiny: Model) -> None:
    data = pickle.dumps({"a": list(range(100))}, protocol=4)
    (tiny.artifacts / "model.pkl").write_bytes(data[: len(data) // 2])
    with pytest.raises(PackagingError, match=r"model\.pkl.*cannot be read to the end without loading it"):
        _build(tiny)


def test_files_that_hold_no_pickle_pass_untouched(tiny: Model) -> None:
    (tiny.artifacts / "table.csv.gz").write_bytes(__import__("gzip").compress(b"a,b\n1,2\n"))
    np.save(tiny.artifacts / "weights.npy", np.arange(10.0))
    (tiny.artifacts / "config.json").write_text("{}")
    assert _build(tiny).archive is not None


def test_a_scikit_learn_model_and_numpy_arrays_pass_and_serve(tiny: Model) -> None:
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(60, 4)), rng.integers(0, 2, 60)
    pipeline = make_pipeline(StandardScaler(), RandomForestClassifier(n_estimators=3, random_state=0)).fit(
        x, y
    )
    joblib.dump(pipeline, tiny.artifacts / "model.joblib")
    joblib.dump(pipeline, tiny.artifacts / "model-z.joblib", compress=3)
    boosted = HistGradientBoostingClassifier(max_iter=3, random_state=0).fit(x, y)  # private _BinMapper
    joblib.dump(boosted, tiny.artifacts / "boosted.joblib")
    (tiny.artifacts / "model.pkl").write_bytes(pickle.dumps(pipeline, protocol=5))
    _joblib_model(tiny)
    manifest = _build(tiny)
    assert {"model.joblib", "model-z.joblib", "model.pkl"} <= set(manifest.by_path())
    assert "pickle_allow" not in json.loads(manifest.to_json())


def test_an_allow_entry_lets_the_named_global_through_and_is_recorded(tiny: Model) -> None:
    joblib.dump({"clock": Global}, tiny.artifacts / "model.joblib")  # imports smkit.pickle_scan.Global
    with pytest.raises(PackagingError, match=r"imports smkit\.pickle_scan\.Global,"):
        _build(tiny)
    manifest = _build(tiny, allow_globals=["smkit.pickle_scan.Global"])
    with tarfile.open(manifest.archive.path) as tar:
        member = tar.extractfile("smkit-manifest.json")
        assert member is not None
        assert json.loads(member.read())["pickle_allow"] == ["smkit.pickle_scan.Global"]
    with pytest.raises(PackagingError, match=r"entry 'Global'.*names no module"):
        _build(tiny, allow_globals=["Global"])


def test_the_config_field_reaches_smkit_package(tiny: Model, tmp_path: Path) -> None:
    joblib.dump({"clock": Global}, tiny.artifacts / "model.joblib")
    data = yaml.safe_load((REPO / "config" / "realtime.yaml").read_text())
    data["model"]["containers"][0]["model_data"]["path"] = str(tiny.out / "model.tar.gz")
    data["security"]["artifacts"] = {"allow_globals": ["smkit.pickle_scan.Global"]}
    config = tmp_path / "deploy.yaml"
    config.write_text(yaml.safe_dump(data))
    code, _, stderr = _package_cli(tiny, "--config", str(config))
    assert code == 0, stderr
    data["security"]["artifacts"] = {"allow_globals": ["os:*system"]}
    config.write_text(yaml.safe_dump(data))
    assert load_config(config).security.artifacts.allow_globals == ["os:*system"]
    data["security"]["artifacts"] = {"allow_globals": ["no_module"]}
    config.write_text(yaml.safe_dump(data))
    with pytest.raises(
        ConfigError, match=r"allow_globals\[0\]: 'no_module': must be module\.name of a pickle"
    ):
        load_config(config)


def test_wildcards_never_reach_dotted_names_dunders_or_sklearn_test_helpers() -> None:
    allow = Allow.of()
    assert allow.matches(Global("sklearn.ensemble._forest", "RandomForestClassifier"))
    assert allow.matches(Global("numpy._core.multiarray", "_reconstruct"))
    # What a HistGradientBoosting pipeline pickles (found with the scaffold's scikit-learn environment).
    assert allow.matches(Global("sklearn.ensemble._hist_gradient_boosting.binning", "_BinMapper"))
    assert allow.matches(Global("numpy.random.bit_generator", "__pyx_unpickle_SeedSequence"))
    assert not allow.matches(Global("sklearn.base", "BaseEstimator.__reduce__.__globals__"))
    assert not allow.matches(Global("sklearn.utils._testing", "TempMemmap"))
    assert not allow.matches(Global("builtins", "eval"))
    assert not allow.matches(Global("posix", "system"))
    assert Allow.of(["mod:Name.method"]).matches(Global("mod", "Name.method"))


def test_scan_errors_name_where_the_stream_breaks(tmp_path: Path) -> None:
    computed = tmp_path / "computed.pkl"
    # STACK_GLOBAL whose module name comes from a REDUCE: only known by running it.
    computed.write_bytes(b"\x80\x04cbuiltins\nstr\n\x8c\x02os\x85R\x8c\x06system\x93.")
    with pytest.raises(ScanError, match="whose name is computed"):
        scan_file(computed)
    lz4 = tmp_path / "model.joblib"
    lz4.write_bytes(b"\x04\x22\x4d\x18" + b"\0" * 20)
    with pytest.raises(ScanError, match="lz4"):
        scan_file(lz4)


def test_vendored_wheels_are_code_not_model_files(tiny: Model) -> None:
    # joblib's wheel ships its own old test pickles (numpy matrices, NDArrayWrapper): pip installs the wheel,
    # nothing unpickles them, so code/wheels/*.whl is not scanned (found with a vendored scikit-learn model).
    evil, _ = _marker_command(tiny)
    wheel = tiny.code / "wheels" / "demo-1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("demo/tests/data.pkl", pickle.dumps(evil))
    assert _build(tiny).archive is not None
    (tiny.artifacts / "twice.pkl").write_bytes(pickle.dumps([evil, evil, Command("true")]))
    with pytest.raises(PackagingError, match=r"imports posix\.system \(os\.system\), which") as error:
        _build(tiny)
    assert str(error.value).count("'posix.system'") == 1


def test_smkit_inspect_refuses_the_file_before_its_handler_check_loads_it(tiny: Model) -> None:
    # An archive of another tool (no manifest, so no hashes to compare): the scan still runs before model_fn.
    _joblib_model(tiny)
    evil, marker = _marker_command(tiny)
    joblib.dump([np.arange(3), evil], tiny.artifacts / "model.joblib")
    archive = tiny.out / "other.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name in ("inference.py", "requirements.txt"):
            tar.add(tiny.code / name, arcname=f"code/{name}")
        tar.add(tiny.artifacts / "model.joblib", arcname="model.joblib")
    result = CliRunner().invoke(main, ["inspect", str(archive), "--python", sys.executable])
    assert result.exit_code == 1
    assert (
        f"{archive}:model.joblib (model.joblib in the archive): its pickle imports posix.system"
        in result.stderr
    )
    assert not marker.exists()
