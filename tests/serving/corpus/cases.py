"""Handlers in the shapes published SageMaker scikit-learn examples take, each with tiny weights built here
and the requests sent to it.

The handler files under ``tests/serving/corpus/<case>/code/`` are written for these tests, in the loose
style users write them (prints, commented-out hooks, training code under the main guard), one shape each:
``model_fn`` loading a joblib file with ``predict_fn`` and the default decoders, a training script that
doubles as the handler with ``model_fn`` only, several models in one folder, NumPy with no model file,
JSON in and a dict out. Only the weights are made here, small and deterministic, with the scikit-learn of
this environment. ``record_toolkit.py`` sends :data:`REQUESTS` to the official sagemaker-inference 1.10.1
toolkit on Multi Model Server 1.1.11 and writes ``toolkit_answers.json``; tests/serving/test_serving_corpus.py
sends them to smkit and compares.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import joblib
import numpy as np

HERE = Path(__file__).resolve().parent
ANSWERS = HERE / "toolkit_answers.json"


def _features() -> tuple[np.ndarray, np.ndarray]:
    rows = (np.arange(48).reshape(12, 4) * 7 % 11).astype(float)
    return rows, rows @ np.array([1.0, -2.0, 0.5, 3.0])


def regressor(model_dir: Path, name: str = "model.joblib") -> None:
    from sklearn.tree import DecisionTreeRegressor

    rows, target = _features()
    joblib.dump(DecisionTreeRegressor(max_depth=3, random_state=0).fit(rows, target), model_dir / name)


def forest_regressor(model_dir: Path) -> None:
    from sklearn.ensemble import RandomForestRegressor

    rows, target = _features()
    model = RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0).fit(rows, target)
    joblib.dump(model, model_dir / "model.joblib")


def two_regressors(model_dir: Path) -> None:
    regressor(model_dir, "model_1.joblib")
    from sklearn.linear_model import LinearRegression

    rows, target = _features()
    joblib.dump(LinearRegression().fit(rows, target / 2), model_dir / "model_2.joblib")


def classifier(kind: str) -> Callable[[Path], None]:
    def build(model_dir: Path) -> None:
        from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
        from sklearn.svm import SVC
        from sklearn.tree import DecisionTreeClassifier

        rows, target = _features()
        labels = (target > np.median(target)).astype(int)
        model = {
            "hist": HistGradientBoostingClassifier(max_iter=5, random_state=0),
            "forest": RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0),
            "tree": DecisionTreeClassifier(max_depth=3, random_state=0),
            "svm": SVC(gamma=0.001, C=100.0),  # the script's own settings
        }[kind]
        joblib.dump(model.fit(rows, labels), model_dir / "model.joblib")

    return build


def nothing(model_dir: Path) -> None:
    """The handler loads no file."""


@dataclass(frozen=True)
class Case:
    """One handler: the shape it stands for, its program (``SAGEMAKER_PROGRAM``), and its weights."""

    name: str
    shape: str
    program: str
    build: Callable[[Path], None]


CASES = (
    Case(
        "joblib_predict_fn",
        "model_fn loads a joblib file, predict_fn calls predict; default input_fn and output_fn",
        "inference.py",
        regressor,
    ),
    Case(
        "joblib_predict_fn_pathlib",
        "the same two hooks with other parameter names and pathlib",
        "inference.py",
        regressor,
    ),
    Case(
        "multiple_models_largest",
        "every model_*.joblib of the folder asked, the largest answer kept; input_fn takes JSON only",
        "inference.py",
        two_regressors,
    ),
    Case(
        "no_model_artifact_mean",
        "no model file: a placeholder model and a NumPy predict_fn",
        "inference.py",
        nothing,
    ),
    Case(
        "training_script_regressor",
        "a training script with model_fn only (regressor), under a program name of its own",
        "train_regressor.py",
        regressor,
    ),
    Case(
        "training_script_model_fn_first",
        "model_fn before the main guard, metrics and pandas imported at the top",
        "boosting.py",
        classifier("hist"),
    ),
    Case(
        "training_script_forest",
        "model_fn only, with an input_fn left commented out",
        "forest.py",
        classifier("forest"),
    ),
    Case(
        "training_script_tree_classifier",
        "training under the main guard first, model_fn after it",
        "tree_classifier.py",
        classifier("tree"),
    ),
    Case(
        "json_in_json_out_dict",
        "input_fn reads a JSON object, output_fn returns a dict",
        "serve_json.py",
        forest_regressor,
    ),
    Case(
        "training_script_svm_helper",
        "model_fn only, beside a module-level helper function (SVM)",
        "svm_digits.py",
        classifier("svm"),
    ),
)


def _npy(array: np.ndarray) -> bytes:
    stream = io.BytesIO()
    np.save(stream, array)
    return stream.getvalue()


@dataclass(frozen=True)
class Request:
    """One invocation: its body, Content-Type and Accept."""

    name: str
    body: bytes
    content_type: str
    accept: str = "application/json"


REQUESTS = (
    Request("csv two integer rows", b"1,2,3,4\n5,6,7,8", "text/csv"),
    Request("csv two float rows", b"0.5,1.5,2.5,3.5\n4.5,5.5,6.5,7.5", "text/csv"),
    Request("csv mixed columns", b"0.5,2,3,4\n4.5,6,7,8", "text/csv"),
    Request("csv one row", b"1,2,3,4", "text/csv"),
    Request("csv with text", b"1,2,abc", "text/csv"),
    Request("csv answered as csv", b"1,2,3,4\n5,6,7,8", "text/csv", "text/csv"),
    Request("csv answered as npy", b"1,2,3,4\n5,6,7,8", "text/csv", "application/x-npy"),
    Request("csv accepting anything", b"1,2,3,4\n5,6,7,8", "text/csv", "*/*"),
    Request("csv accepting a list", b"1,2,3,4\n5,6,7,8", "text/csv", "text/csv;q=0.5, application/json"),
    Request("json rows", b"[[1, 2, 3, 4], [5, 6, 7, 8]]", "application/json"),
    Request("json one row", b"[[0.5, 1.5, 2.5, 3.5]]", "application/json"),
    Request("json flat list", b"[1, 2, 3, 4]", "application/json"),
    Request("json object", json.dumps({"Input": [[1, 2, 3, 4]]}).encode(), "application/json"),
    Request("npy rows", _npy(np.arange(8, dtype=np.float64).reshape(2, 4)), "application/x-npy"),
    Request("plain text", b"hello", "text/plain"),
)
