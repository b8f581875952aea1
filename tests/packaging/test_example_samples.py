"""``make package-model`` compares what a training run answers with the committed samples and never
rewrites them (scripts/package_models.py): requests identical, answers within the committed rtol."""

from __future__ import annotations

import json
import shutil
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
