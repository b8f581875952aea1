"""A handler in JumpStart's LightGBM layout packages and serves on an AWS framework image, as on SageMaker.

JumpStart's tabular scripts (e.g. the LightGBM inference script bundle 1.2.1, ``inference.py`` with a
``constants/constants.py`` helper package) import the toolkit that AWS's framework images carry
(``from sagemaker_inference import encoder``), list none of the image's packages, and name the LightGBM
wheel they ship by where SageMaker extracts the model: ``/opt/ml/model/code/lib/lightgbm/<wheel>``. The handler
below has that layout and that code path; it is written for this test because the only public copy of the
script found carries no licence. The config names AWS's scikit-learn image, which ships sagemaker-inference
1.5.5 and pandas (aws/sagemaker-scikit-learn-container requirements.txt): the model's environment gets them
as the image layer, and the wheel line resolves against the model folder.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import botocore.exceptions
import numpy as np
import pytest
from click.testing import CliRunner
from framework_harness import run_in

from smkit.cli import main
from smkit.local import LocalEndpoint
from smkit.modelenv import ModelEnvironment

pytestmark = pytest.mark.frameworks
IMAGE = "683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-scikit-learn:1.4-2-cpu-py3"
LIGHTGBM = "4.7.0"  # the scaffolded LightGBM environment's version, so the pickled Booster loads

INFERENCE = """\
import io
import logging
import os
from typing import Any

import joblib
import lightgbm
import numpy as np
import pandas as pd
from constants import constants
from sagemaker_inference import encoder


def model_fn(model_dir: str) -> lightgbm.Booster:
    try:
        return joblib.load(os.path.join(model_dir, "model.pkl"))
    except Exception:
        logging.exception("Failed to load model from checkpoint")
        raise


def transform_fn(task: lightgbm.Booster, input_data: Any, content_type: str, accept: str):
    if content_type == constants.REQUEST_CONTENT_TYPE:
        data = pd.read_csv(io.StringIO(input_data), sep=",", header=None)
        data.columns = [f"feature_{x}" for x in range(data.shape[1])]
        model_output = task.predict(data, num_iteration=task.best_iteration)
        if model_output.ndim == 1:
            model_output = np.vstack((1.0 - model_output, model_output)).transpose()
        output = {constants.PROBABILITIES: model_output}
        if accept.endswith(constants.VERBOSE_EXTENSION):
            output[constants.PREDICTED_LABEL] = np.argmax(model_output, axis=1)
            accept = accept.rstrip(constants.VERBOSE_EXTENSION)
        return encoder.encode(output, accept)
    raise ValueError('{{"error": "unsupported content type {}"}}'.format(content_type or "unknown"))
"""

CONSTANTS = """\
REQUEST_CONTENT_TYPE = "text/csv"
PROBABILITIES = "probabilities"
VERBOSE_EXTENSION = ";verbose"
PREDICTED_LABEL = "predicted_label"
"""

TRAIN = """
    import pickle, sys
    import lightgbm, numpy as np
    rows = (np.arange(400).reshape(100, 4) * 7 % 13).astype(float)
    labels = (rows @ [1.0, -1.0, 0.5, 0.25] > 2).astype(int)
    booster = lightgbm.train({"objective": "binary", "verbose": -1, "num_leaves": 4}, lightgbm.Dataset(rows, labels),
                             num_boost_round=5)
    with open(sys.argv[1], "wb") as f:
        pickle.dump(booster, f)
    print(booster.predict(np.array([[1.0, 2.0, 3.0, 4.0], [5.0, 1.0, 0.0, 2.0]])).tolist())
"""

CONFIG = f"""\
name: jumpstart-lightgbm
environment: dev
image:
  source: dlc
  uri: {IMAGE}
model:
  containers:
    - name: lightgbm
      model_data:
        source: archive
        path: build/model.tar.gz
endpoint:
  type: realtime
  variants:
    - name: main
      instance_type: ml.m5.large
      initial_instance_count: 1
"""


def test_jumpstart_layout_packages_and_serves_on_the_scikit_learn_image(
    tmp_path: Path, framework_env: Callable[[str], ModelEnvironment]
) -> None:
    artifacts, code = tmp_path / "artifacts", tmp_path / "code"
    (code / "constants").mkdir(parents=True)
    artifacts.mkdir()
    (code / "inference.py").write_text(INFERENCE)
    (code / "constants" / "__init__.py").write_text("")
    (code / "constants" / "constants.py").write_text(CONSTANTS)
    wheels = code / "lib" / "lightgbm"
    downloaded = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
         "--python-version", "3.11", "--platform", "manylinux_2_28_x86_64", "-d", str(wheels),
         f"lightgbm=={LIGHTGBM}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert downloaded.returncode == 0, downloaded.stderr
    [wheel] = wheels.glob("*.whl")
    (code / "requirements.txt").write_text(f"/opt/ml/model/code/lib/lightgbm/{wheel.name}")
    trained = run_in(framework_env("lightgbm"), ["-c", textwrap.dedent(TRAIN), str(artifacts / "model.pkl")])
    assert trained.returncode == 0, trained.stderr
    positive = json.loads(trained.stdout)
    config = tmp_path / "jumpstart.yaml"
    config.write_text(CONFIG)

    packaged = CliRunner().invoke(
        main,
        ["package", "--code", str(code), "--artifacts", str(artifacts), "--output",
         str(tmp_path / "build" / "model.tar.gz"), "--config", str(config), "--no-progress"],
    )  # fmt: skip
    assert packaged.exit_code == 0, packaged.output

    with LocalEndpoint(config, root=tmp_path) as endpoint:
        client = endpoint.client()
        answer = client.invoke_endpoint(
            EndpointName="jumpstart-lightgbm",
            ContentType="text/csv",
            Accept="application/json;verbose",
            Body="1,2,3,4\n5,1,0,2\n",
        )
        document = json.loads(answer["Body"].read())
        np.testing.assert_allclose(document["probabilities"], [[1 - p, p] for p in positive], rtol=1e-6)
        assert document["predicted_label"] == [int(p > 0.5) for p in positive]
        with pytest.raises(botocore.exceptions.ClientError) as refused:
            client.invoke_endpoint(EndpointName="jumpstart-lightgbm", ContentType="text/plain", Body="x")
        # The handler's JSON message reaches the client as the document it wrote.
        assert '{"error": "unsupported content type text/plain"}' in str(refused.value)
