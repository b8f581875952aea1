"""Published ``inference.py`` files, each with tiny weights built here and the requests sent to it.

Every handler file under ``tests/serving/corpus/<case>/code/`` is the published file, byte for byte (its
source below); only the weights are made here, small and deterministic, with the scikit-learn of this
environment. ``record_toolkit.py`` sends :data:`REQUESTS` to the official sagemaker-inference 1.10.1 toolkit
on Multi Model Server 1.1.11 and writes ``toolkit_answers.json``; tests/serving/test_serving_corpus.py sends
them to smkit and compares.
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

LOCAL_MODE = "aws-samples/amazon-sagemaker-local-mode@247ae347437fc723b716ccf3e5e1b8dcd658d3e8 (MIT-0)"
# The repository's top-level folders begin with spaces (" archived", "     deploy_and_monitor"); paths are
# written without them.
EXAMPLES = "aws/amazon-sagemaker-examples@2d519b52c3a2c2361f2b87f0d3de46fd6c0232a5 (Apache-2.0)"
# The SDK's last commit with tests/data/ at the top (version 3 moved it under legacy/, then removed it).
PYTHON_SDK = "aws/sagemaker-python-sdk@35484d21a8f880a824129da467b1403ece3ea2b7 (Apache-2.0)"


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
    """One published handler: where it comes from (repository at a commit, path, and the git blob id of
    the file there, which the copy here must have), its entry point, and its weights."""

    name: str
    source: str
    path: str
    program: str
    build: Callable[[Path], None]
    blob: str


CASES = (
    Case(
        "sklearn_bring_your_own_model",
        LOCAL_MODE,
        "scikit_learn_bring_your_own_model_local_serving/code/inference.py",
        "inference.py",
        regressor,
        blob="fada20eba2e8d0929ce5cf8fef2d71fbf9aee54c",
    ),
    Case(
        "sklearn_multiple_models",
        LOCAL_MODE,
        "scikit_learn_script_mode_local_serving_multiple_models_with_one_invocation/code/inference.py",
        "inference.py",
        two_regressors,
        blob="9d147b170b4d7fc650449d5d3bc11d03060e84ec",
    ),
    Case(
        "numpy_no_model_artifact",
        LOCAL_MODE,
        "scikit_learn_script_mode_local_serving_no_model_artifact/code/inference.py",
        "inference.py",
        nothing,
        blob="405365eee938476bd14a9af4a7c4245b8cddd0d5",
    ),
    Case(
        "sklearn_california_training_script",
        LOCAL_MODE,
        "scikit_learn_script_mode_local_training_and_serving/code/scikit_learn_california.py",
        "scikit_learn_california.py",
        regressor,
        blob="accd8ad1d4b2163db3a3c67b8c2cba8e6c96feb8",
    ),
    Case(
        "shadow_histgradientboost",
        EXAMPLES,
        "deploy_and_monitor/sm-shadow_variant_shadow_api/code/histgradientboost.py",
        "histgradientboost.py",
        classifier("hist"),
        blob="ff1aa1edc727d638161fda638284a00130b027d9",
    ),
    Case(
        "shadow_randomforest",
        EXAMPLES,
        "deploy_and_monitor/sm-shadow_variant_shadow_api/code/randomforest.py",
        "randomforest.py",
        classifier("forest"),
        blob="16c21aa1e3371b41961fbe97773535028918994f",
    ),
    Case(
        "sklearn_iris_training_script",
        EXAMPLES,
        "archived/scikit_learn_iris/scikit_learn_iris.py",
        "scikit_learn_iris.py",
        classifier("tree"),
        blob="b6246fba9f1b58b6b71aa682b59f5cb60b58c982",
    ),
    Case(
        "python_sdk_joblib",
        EXAMPLES,
        "archived/python-sdk/code/inference.py",
        "inference.py",
        regressor,
        blob="26450cb837518fb655e85b8c2c58b52a1bc5eba8",
    ),
    Case(
        "sklearn_json_in_json_out",
        EXAMPLES,
        "archived/sklearn/train.py",
        "train.py",
        forest_regressor,
        blob="9b5cb27a5e7fd5ac316516f8ae16cf8c9ac8b7f5",
    ),
    Case(
        "sklearn_mnist_training_script",
        PYTHON_SDK,
        "tests/data/sklearn_mnist/mnist.py",
        "mnist.py",
        classifier("svm"),
        blob="530bd910588eed882bc30558b11779ef1da368ef",
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
