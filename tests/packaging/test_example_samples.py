"""``make package-model`` compares what a training run answers with the committed samples and never
rewrites them (scripts/package_models.py): requests identical, answers within the committed rtol."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scripts import package_models
from scripts.package_models import Training, compare_samples, train_if_stale
from smkit.packaging import PackagingError

REPO = Path(__file__).resolve().parents[2]


def _samples(folder: Path, predictions: list[float], rtol: float = 1e-6, request: str = "1.0,2.0\n") -> Path:
    folder.mkdir(parents=True)
    (folder / "request.csv").write_text(request)
    (folder / "expected.json").write_text(json.dumps({"predictions": predictions, "rtol": rtol}))
    return folder


def test_answers_within_the_stated_rtol_are_the_same(tmp_path: Path) -> None:
    old = _samples(tmp_path / "old", [872.892517, 0.0, 1e-15], rtol=1e-5)
    new = _samples(tmp_path / "new", [872.8925, 0.0, 3e-15], rtol=1e-5)  # another CPU's last digits
    assert compare_samples(old, new) == []


def test_answers_beyond_the_rtol_and_changed_requests_are_named(tmp_path: Path) -> None:
    old = _samples(tmp_path / "old", [1.0, 2.0])
    new = _samples(tmp_path / "new", [1.0, 2.1], request="1.0,2.5\n")
    (new / "request.npy").write_bytes(b"x")
    assert compare_samples(old, new) == [
        "expected.json['predictions'][1]: 2.0 != 2.1 (rtol 1e-06)",
        "request.csv is not byte-identical (a request must be)",
        "request.npy exists only in the new samples",
    ]


@pytest.fixture
def iris_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of model_code/ with the iris example (its training writes artifacts/ beside its code)."""
    code = tmp_path / "model_code"
    shutil.copytree(REPO / "model_code" / "iris", code / "iris", ignore=shutil.ignore_patterns("artifacts"))
    shutil.copy(REPO / "model_code" / "common.py", code / "common.py")
    monkeypatch.setattr(package_models, "MODEL_CODE", code)
    return code


IRIS = Training("iris/train.py", ("iris/artifacts/classifier.joblib",))


def test_a_training_run_compares_and_leaves_the_committed_samples_alone(
    iris_copy: Path, tmp_path: Path
) -> None:
    committed = iris_copy / "iris" / "samples"
    before = {p.name: p.read_bytes() for p in committed.iterdir()}
    assert train_if_stale(IRIS, tmp_path / "build") is True
    assert {p.name: p.read_bytes() for p in committed.iterdir()} == before
    assert compare_samples(committed, tmp_path / "build" / ".samples" / "iris") == []
    assert train_if_stale(IRIS, tmp_path / "build") is False  # stamped: not trained again


def test_a_training_that_answers_differently_stops_the_build(iris_copy: Path, tmp_path: Path) -> None:
    expected = iris_copy / "iris" / "samples" / "expected.json"
    document = json.loads(expected.read_text())
    document["probabilities"][0][0] += 0.5  # the committed answer was edited: the new run disagrees
    expected.write_text(json.dumps(document))
    with pytest.raises(PackagingError) as info:
        train_if_stale(IRIS, tmp_path / "build")
    message = str(info.value)
    assert message.startswith(
        "model_code/iris/samples: differs from what model_code/iris/train.py produced now"
    )
    assert "expected.json['probabilities'][0][0]: " in message and "(rtol 1e-06)" in message
    assert message.endswith("rewrite the committed samples with `python -m scripts.package_models "
                            "--update-samples` and commit them")  # fmt: skip
    assert not (tmp_path / "build" / ".stamps").exists()  # not stamped: the next build compares again


def _blas_kernels() -> list[str]:
    """OpenBLAS kernels this CPU can run besides its own (``OPENBLAS_CORETYPE``, read when NumPy loads it):
    the generic SSE3 one and, where the CPU has AVX2, Haswell's (an AMD EPYC and most CI machines pick it).
    """
    if platform.machine() in ("aarch64", "arm64"):
        return ["ARMV8"]
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    return ["Prescott", *(["Haswell"] if " avx2" in flags else [])]


@pytest.mark.parametrize("kernel", _blas_kernels())
@pytest.mark.parametrize(
    "training", [t for t in package_models.TRAININGS if t.requires is None], ids=lambda t: t.model
)
def test_each_example_trains_to_its_committed_samples_on_another_cpus_blas_kernel(
    training: Training, kernel: str, tmp_path: Path
) -> None:
    """Another CPU rounds differently (its BLAS kernel): the answers stay within the committed rtol."""
    code = tmp_path / "model_code"
    shutil.copytree(REPO / "model_code", code, ignore=shutil.ignore_patterns("artifacts", "__pycache__"))
    produced = tmp_path / "samples"
    environ = {**os.environ, "OPENBLAS_CORETYPE": kernel}
    subprocess.run(
        [sys.executable, str(code / training.script), "--samples", str(produced)],
        env=environ,
        capture_output=True,
        text=True,
        check=True,
    )
    assert compare_samples(REPO / "model_code" / training.model / "samples", produced) == []
