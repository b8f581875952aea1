"""Bring your own model, end to end with real frameworks: smkit init -> train -> package -> serve locally.

Each framework's model is trained inside the test (tiny, CPU) in a scaffolded model folder. Packaging
vendors the wheels (the scaffold's config has network isolation on) and checks the handler in the model's
own environment; the kit's venv never gains the framework. The local endpoint then installs the
requirements offline from the archive while pip points at an unreachable index, and answers boto3 with
the expected predictions. The environments live in the product's cache, shared with the other framework
tests (a scaffold's requirements are the same bytes there, so the same layer); only the offline install
goes to a model layer of its own, so that it runs every time. Heavy (PyTorch's wheel is ~180 MB):
``make test-frameworks``, which CI runs after ``make test``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from smkit.cli import main
from smkit.client import smoke
from smkit.config import load_config
from smkit.local import LocalEndpoint
from smkit.modelenv import CACHE_VAR, cache_root

pytestmark = pytest.mark.frameworks
UNREACHABLE_INDEX = "http://127.0.0.1:9/simple"  # discard port: nothing listens
# Framework -> the module it installs (which smkit's own venv must not gain).
FRAMEWORKS = {"lightgbm": "lightgbm", "xgboost": "xgboost", "pytorch": "torch", "onnx": "onnxruntime"}


def _kit_has(module: str) -> bool:
    code = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    return subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def _smkit(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output + (result.stderr if result.stderr_bytes else "")
    return result.stdout


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_scaffolded_model_packages_and_serves_offline(
    framework: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kit_had = _kit_has(FRAMEWORKS[framework])
    name = f"byo-{framework}"
    _smkit("init", name, "--framework", framework, "--root", str(tmp_path))
    model, config = tmp_path / "model_code" / name, tmp_path / "config" / f"{name}.yaml"
    _smkit("env", str(model), "--config", str(config), "--", "python", str(model / "train.py"))
    # The samples of the user's own rows (make samples ROWS=...): the model's answers for them.
    rows = tmp_path / "my_rows.csv"
    rows.write_text("".join(",".join(["0.5"] * 8) + "\n" for _ in range(2)))
    train = ["python", str(model / "train.py"), "--samples-only", "--rows", str(rows)]
    _smkit("env", str(model), "--config", str(config), "--", *train)
    assert len(json.loads((model / "samples" / "expected.json").read_text())["predictions"]) == 2

    archive = tmp_path / "build" / name / "model.tar.gz"
    out = _smkit(
        "package", "--code", str(model / "code"), "--artifacts", str(model / "artifacts"),
        "--output", str(archive), "--config", str(config), "--no-progress",
    )  # fmt: skip
    assert "code/wheels/" in out and "handler: toolkit form" in out
    assert _kit_has(FRAMEWORKS[framework]) == kit_had, "the kit's venv gained the framework"

    # Served offline: the model layer is installed again from code/wheels, with no index reachable, into a
    # cache of its own (the image layer, which the container has, linked from the shared one).
    served_cache = tmp_path / "served-cache"
    served_cache.mkdir()
    (served_cache / "envs").symlink_to(cache_root() / "envs", target_is_directory=True)
    monkeypatch.setenv(CACHE_VAR, str(served_cache))
    monkeypatch.setenv("PIP_INDEX_URL", UNREACHABLE_INDEX)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    cfg = load_config(config)
    with LocalEndpoint(cfg, root=tmp_path) as endpoint:
        expected = json.loads((model / "samples" / "expected.json").read_text())
        answer = endpoint.client().invoke_endpoint(
            EndpointName=cfg.name,
            ContentType="text/csv",
            Accept="application/json",
            Body=(model / "samples" / "request.csv").read_bytes(),
        )
        ok, detail = smoke.compare(expected, json.loads(answer["Body"].read()))
        assert ok, detail
        results = smoke.run(endpoint.client(), cfg.name, smoke.plan(endpoint.deployment, tmp_path))
        assert results and all(r.ok for r in results), [r.detail for r in results]
    installed = [p.name for p in (served_cache / "requirements").glob("*/*")]
    assert FRAMEWORKS[framework] in installed, f"the offline install ran: {installed}"


# A user's scikit-learn model the repo does not ship: a Pipeline fitted on a DataFrame with a text category,
# answering class probabilities. Trained in the model's environment (as the user's own venv would).
USER_PIPELINE = """
import sys, joblib, numpy as np, pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
rng = np.random.default_rng(1)
df = pd.DataFrame({"tenure": rng.integers(1, 72, 200).astype(float), "monthly": rng.normal(60, 20, 200),
                   "plan": rng.choice(["basic", "plus", "pro"], 200)})
y = ((df.tenure < 24) & (df.plan == "basic")).astype(int)
pre = ColumnTransformer([("num", StandardScaler(), ["tenure", "monthly"]),
                         ("cat", OneHotEncoder(handle_unknown="ignore"), ["plan"])])
model = Pipeline([("pre", pre), ("clf", HistGradientBoostingClassifier(max_iter=10))]).fit(df, y)
joblib.dump(model, sys.argv[1])
"""


def test_users_sklearn_pipeline_with_categories_answers_probabilities(
    tmp_path: Path,
) -> None:
    scratch = tmp_path / "scratch"  # the user's own folder, outside the project
    scratch.mkdir()
    project = tmp_path / "project"
    out = _smkit("init", "churn", "--framework", "sklearn", "--root", str(project))
    model, config = project / "model_code" / "churn", project / "config" / "churn.yaml"
    target = model / "artifacts" / "model.joblib"
    assert str(target) in out, out  # init names the file the handler loads
    env = ["env", str(model), "--config", str(config), "--"]
    _smkit(*env, "python", "-c", USER_PIPELINE, str(scratch / "churn_pipeline.joblib"))
    shutil.copy(scratch / "churn_pipeline.joblib", target)
    handler = model / "code" / "inference.py"
    handler.write_text(
        handler.read_text().replace('PREDICT_METHOD = "predict"', 'PREDICT_METHOD = "predict_proba"')
    )
    (scratch / "my_rows.csv").write_text("34,36.8,plus\n5,80.5,basic\n")
    _smkit(*env, "python", str(model / "train.py"), "--samples-only", "--rows", str(scratch / "my_rows.csv"))
    probabilities = json.loads((model / "samples" / "expected.json").read_text())["predictions"]
    assert len(probabilities) == 2 and all(len(p) == 2 for p in probabilities)

    archive = project / "build" / "churn" / "model.tar.gz"
    _smkit(
        "package", "--code", str(model / "code"), "--artifacts", str(model / "artifacts"),
        "--output", str(archive), "--config", str(config), "--no-progress",
    )  # fmt: skip
    cfg = load_config(config)
    with LocalEndpoint(cfg, root=project) as endpoint:
        results = smoke.run(endpoint.client(), cfg.name, smoke.plan(endpoint.deployment, project))
        assert len(results) == 2 and all(r.ok for r in results), [r.detail for r in results]
        client = endpoint.client()
        record = json.dumps([{"plan": "plus", "monthly": 36.8, "tenure": 34}])
        answer = client.invoke_endpoint(EndpointName=cfg.name, ContentType="application/json", Body=record)
        assert smoke.compare({"predictions": probabilities[:1]}, json.loads(answer["Body"].read()))[0]
        with pytest.raises(client.exceptions.ModelError, match=r"fitted on 3 columns \['tenure', 'monthly'"):
            client.invoke_endpoint(EndpointName=cfg.name, ContentType="text/csv", Body=b"1,2\n")
