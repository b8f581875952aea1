"""A TorchScript-only PyTorch model (``model.pt``, no handler code) on AWS's PyTorch image, served locally.

The config names the PyTorch inference image (``image.source: dlc``), whose toolkit loads ``model.pt`` with
``torch.jit.load`` and calls it when the archive has no ``model_fn`` (docs/handler-semantics.md). Locally
the kit applies the same defaults (``SMKIT_FRAMEWORK=pytorch``): the archive is packaged, checked and
served with ``--python``, the interpreter of a PyTorch model's environment with its torch layer on
``PYTHONPATH`` (as ``smkit env`` runs a command); it stands in for the image, whose own Python and torch
build are not installed here. Then it answers through boto3.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from framework_harness import environ_of, run_in

from smkit.cli import main
from smkit.local import LocalEndpoint
from smkit.modelenv import ModelEnvironment

pytestmark = pytest.mark.frameworks
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-inference:2.6.0-cpu-py312-ubuntu22.04-sagemaker"
ROWS = [[1.0, 2.0, 3.0, 4.0], [0.5, -1.0, 0.0, 2.0]]

TRAIN = """
    import json, sys
    import torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)).eval()
    torch.jit.save(torch.jit.script(model), sys.argv[1])
    with torch.no_grad():
        print(json.dumps(model(torch.tensor({rows})).tolist()))
"""

CONFIG = f"""\
name: torchscript-only
environment: dev
image:
  source: dlc
  uri: {IMAGE}
model:
  network_isolation: true
  containers:
    - name: torchscript
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


def test_torchscript_model_without_handler_serves_with_the_pytorch_images_defaults(
    tmp_path: Path, framework_env: Callable[[str], ModelEnvironment], monkeypatch: pytest.MonkeyPatch
) -> None:
    torch_env = framework_env("pytorch")
    artifacts, code = tmp_path / "artifacts", tmp_path / "code"
    artifacts.mkdir()
    code.mkdir()
    (code / "requirements.txt").write_text("")  # torch is in the image; no inference.py at all
    trained = run_in(torch_env, ["-c", textwrap.dedent(TRAIN.format(rows=ROWS)), str(artifacts / "model.pt")])
    assert trained.returncode == 0, trained.stderr
    expected = json.loads(trained.stdout)
    monkeypatch.setenv("PYTHONPATH", environ_of(torch_env)["PYTHONPATH"])
    config = tmp_path / "torchscript.yaml"
    config.write_text(CONFIG)

    packaged = CliRunner().invoke(
        main,
        ["package", "--code", str(code), "--artifacts", str(artifacts), "--output",
         str(tmp_path / "build" / "model.tar.gz"), "--config", str(config), "--python", torch_env.python,
         "--no-progress"],
    )  # fmt: skip
    assert packaged.exit_code == 0, packaged.output
    assert "default handlers load model.pt" in packaged.output

    with LocalEndpoint(config, root=tmp_path, python=torch_env.python) as endpoint:
        client = endpoint.client()
        for content_type, body in (
            ("application/json", json.dumps(ROWS)),
            ("text/csv", "1.0,2.0,3.0,4.0\n0.5,-1.0,0.0,2.0\n"),
        ):
            answer = client.invoke_endpoint(
                EndpointName="torchscript-only",
                ContentType=content_type,
                Accept="application/json",
                Body=body,
            )
            np.testing.assert_allclose(json.loads(answer["Body"].read()), expected, rtol=1e-5)
        # The image decodes CSV with np.genfromtxt(dtype=None): a column of integers next to one of floats
        # makes a structured array, which torch.FloatTensor refuses (500), on AWS as here.
        with pytest.raises(client.exceptions.ModelError, match=r"server error \(500\)"):
            client.invoke_endpoint(
                EndpointName="torchscript-only", ContentType="text/csv", Body="1,2,3,4\n0.5,-1,0,2\n"
            )
