"""The example models: deterministic training, committed samples, and every hook on every sample format."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pkg_harness import MODEL_CODE, Trained

from scripts.package_models import compare_samples

# Runs in a fresh interpreter per model, as a serving worker would: code/ first on sys.path, then the
# shared helpers that packaging copies into code/.
RUNNER = r"""
import io, json, sys
import numpy as np
code, model_dir, samples = sys.argv[1:4]
sys.path.insert(0, code)
sys.path.insert(1, code + "/../../shared")
import inference
model = inference.model_fn(model_dir)
out = {}
for name, ctype in (("request.csv", "text/csv"), ("request.json", "application/json"),
                    ("request.npy", "application/x-npy")):
    raw = open(f"{samples}/{name}", "rb").read()
    body = raw if ctype == "application/x-npy" else raw.decode()
    data = inference.input_fn(body, ctype)
    pred = inference.predict_fn(data, model)
    for accept in ("application/json", "text/csv", "application/x-npy", "", "*/*", "text/html, text/csv"):
        payload, media = inference.output_fn(pred, accept)
        if media == "application/x-npy":
            payload = json.dumps(np.load(io.BytesIO(payload), allow_pickle=False).tolist()).encode()
        out[f"{name}|{accept}"] = [media, payload.decode()]
errors = {}
for body, ctype, accept in (("1,2,3\n", "text/csv", "application/json"), ("1,a\n", "text/csv", "application/json"),
                            ("[[1]]", "application/x-www-form-urlencoded", "application/json"),
                            (None, "text/csv", "image/png"), ("{}", "application/json", "application/json")):
    try:
        data = inference.input_fn(body if body is not None else open(f"{samples}/request.csv").read(), ctype)
        inference.output_fn(inference.predict_fn(data, model), accept)
    except Exception as exc:
        errors[f"{ctype}|{accept}|{body}"] = [getattr(exc, "status_code", None), str(exc)]
print(json.dumps({"outputs": out, "errors": errors}))
"""


def _run(code: Path, model_dir: Path, samples: Path) -> dict:  # type: ignore[type-arg]
    proc = subprocess.run(
        [sys.executable, "-I", "-B", "-c", RUNNER, str(code), str(model_dir), str(samples)],
        capture_output=True,
        text=True,
        check=True,
        cwd=model_dir,
    )
    return json.loads(proc.stdout)


@pytest.mark.parametrize("name", ["tabular", "iris", "featurizer"])
def test_training_reproduces_committed_samples(trained: Trained, name: str) -> None:
    committed = MODEL_CODE / name / "samples"
    # Requests byte for byte, answers within the committed rtol: another CPU may change the last digits.
    assert compare_samples(committed, trained.samples[name]) == []
    rows = np.load(committed / "request.npy", allow_pickle=False)
    assert rows.dtype == np.float64 and rows.shape[0] == 10
    assert rows.tolist() == json.loads((committed / "request.json").read_text())
    expected = json.loads((committed / "expected.json").read_text())
    assert expected["rtol"] == 1e-6 and len(expected["predictions"]) == 10


@pytest.mark.parametrize("name", ["tabular", "regressor_direct"])
def test_regressors_answer_every_format(trained: Trained, name: str) -> None:
    if name == "tabular":
        result = _run(
            trained.code("tabular"), trained.artifacts["tabular"], MODEL_CODE / "tabular" / "samples"
        )
        expected = json.loads((MODEL_CODE / "tabular" / "samples" / "expected.json").read_text())[
            "predictions"
        ]
        n_features = 10
    else:
        samples = MODEL_CODE / "featurizer" / "samples"
        featurized = _run(trained.code("featurizer"), trained.artifacts["featurizer"], samples)
        assert featurized["outputs"]["request.csv|"] == ["text/csv", (samples / "featurized.csv").read_text()]
        direct = np.loadtxt(samples / "featurized.csv", delimiter=",")
        assert direct.shape == (10, 11)
        expected = json.loads((samples / "expected.json").read_text())["predictions"]
        # The regressor gets exactly the featurizer's CSV (the serial pipeline's middle hop).
        hop = trained.samples["featurizer"].parent / "hop"
        hop.mkdir(exist_ok=True)
        (hop / "request.csv").write_text((samples / "featurized.csv").read_text())
        (hop / "request.json").write_text(json.dumps({"instances": direct.tolist()}))
        np.save(hop / "request.npy", direct, allow_pickle=False)
        result = _run(trained.code("regressor"), trained.artifacts["regressor"], hop)
        n_features = 11
    outputs = result["outputs"]
    for source in ("request.csv", "request.json", "request.npy"):
        media, body = outputs[f"{source}|application/json"]
        assert media == "application/json"
        np.testing.assert_allclose(json.loads(body)["predictions"], expected, rtol=1e-6)
        media, body = outputs[f"{source}|text/csv"]
        assert media == "text/csv"
        np.testing.assert_allclose([float(x) for x in body.splitlines()], expected, rtol=1e-6)
        assert outputs[f"{source}|application/x-npy"][0] == "application/x-npy"
        np.testing.assert_allclose(json.loads(outputs[f"{source}|application/x-npy"][1]), expected, rtol=1e-6)
        assert outputs[f"{source}|"][0] == outputs[f"{source}|*/*"][0] == "application/json"
        assert outputs[f"{source}|text/html, text/csv"][0] == "text/csv"
    statuses = {key: value[0] for key, value in result["errors"].items()}
    messages = " ".join(value[1] for value in result["errors"].values())
    assert statuses == {
        "text/csv|application/json|1,2,3\n": 400,
        "text/csv|application/json|1,a\n": 400,
        "application/x-www-form-urlencoded|application/json|[[1]]": 415,
        "text/csv|image/png|None": 406,
        "application/json|application/json|{}": 400,
    }
    assert f"expected {n_features} features per row" in messages and "got 3" in messages


def test_iris_classifier_and_helper_collision(trained: Trained) -> None:
    samples = MODEL_CODE / "iris" / "samples"
    result = _run(trained.code("iris"), trained.artifacts["iris"], samples)
    expected = json.loads((samples / "expected.json").read_text())
    for source in ("request.csv", "request.json", "request.npy"):
        body = json.loads(result["outputs"][f"{source}|application/json"][1])
        assert body["predictions"] == expected["predictions"]
        np.testing.assert_allclose(body["probabilities"], expected["probabilities"], rtol=1e-6)
        assert result["outputs"][f"{source}|text/csv"][1].split() == expected["predictions"]
    assert set(expected["predictions"]) == {"setosa", "versicolor", "virginica"}
    assert result["errors"]["text/csv|application/json|1,2,3\n"][0] == 400
    # Same helper module name, different content: a shared module cache would break one of the two.
    tabular, iris = (MODEL_CODE / m / "code" / "features.py" for m in ("tabular", "iris"))
    assert tabular.read_text() != iris.read_text()
    assert "N_FEATURES = len(FEATURE_NAMES)" in iris.read_text()


def test_requirements_pin_the_installed_versions() -> None:
    from importlib.metadata import version

    for name in ("tabular", "iris", "featurizer", "regressor"):
        lines = (MODEL_CODE / name / "code" / "requirements.txt").read_text().split()
        pins = dict(line.split("==") for line in lines)
        assert pins == {dist: version(dist) for dist in pins}
        # The tabular model is served from exported arrays: NumPy only, no scikit-learn in the image.
        assert (
            set(pins) == {"numpy"} if name == "tabular" else {"numpy", "scikit-learn", "joblib"} <= set(pins)
        )


def test_tabular_trees_load_without_pickle_and_check_their_features(trained: Trained, tmp_path: Path) -> None:
    """``model.npz`` holds plain arrays; a file for other features or another format is refused by name."""
    sys.path.insert(0, str(trained.code("tabular")))
    try:
        import trees  # noqa: PLC0415 - the example's own module, importable only after the path change
    finally:
        sys.path.remove(str(trained.code("tabular")))
    path = trained.artifacts["tabular"] / "model.npz"
    with np.load(path, allow_pickle=False) as stored:
        arrays = {name: stored[name] for name in stored.files}
    assert sorted(arrays) == sorted(trees.FIELDS)
    assert all(array.dtype != object for array in arrays.values())
    names = tuple(str(n) for n in arrays["feature_names"])
    forest = trees.load_forest(str(path), names)
    assert (forest.n_trees, forest.depth) == (100, 2)
    with pytest.raises(trees.ForestError, match="trained on features .* but this handler parses"):
        trees.load_forest(str(path), names[::-1])
    other = tmp_path / "other.npz"
    np.savez(other, **{**arrays, "format": np.array("smkit-forest/0")})
    with pytest.raises(trees.ForestError, match="format 'smkit-forest/0', expected 'smkit-forest/1'"):
        trees.load_forest(str(other), names)
    np.savez(other, **{**arrays, "feature": arrays["feature"].ravel()})
    with pytest.raises(trees.ForestError, match="trees must be 2-D arrays"):
        trees.load_forest(str(other), names)
    np.savez(other, **{k: v for k, v in arrays.items() if k != "leaf_value"})
    with pytest.raises(trees.ForestError, match="not a tree ensemble file"):
        trees.load_forest(str(other), names)


def test_tabular_training_rebuilds_the_same_model_file(trained: Trained, tmp_path: Path) -> None:
    """Retraining writes ``model.npz`` byte for byte again (fixed seeds, fixed zip timestamps)."""
    subprocess.run(
        [
            sys.executable,
            str(MODEL_CODE / "tabular" / "train.py"),
            "--artifacts",
            str(tmp_path / "a"),
            "--samples",
            str(tmp_path / "s"),
        ],
        check=True,
    )
    first = (trained.artifacts["tabular"] / "model.npz").read_bytes()
    assert (tmp_path / "a" / "model.npz").read_bytes() == first
