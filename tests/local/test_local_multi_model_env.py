"""A multi-model container runs in the image's environment, as a single model does, never in smkit's own.

The handler imports threadpoolctl, which smkit's venv has (scikit-learn needs it) and the kit's image does
not: undeclared, it fails to load locally exactly as it would on AWS, with the error a single model gets;
declared and vendored, it is installed at the model's first load, offline and without a resolver.
"""

from __future__ import annotations

import io
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from botocore.exceptions import ClientError

from smkit.local import LocalEndpoint, LocalEndpointError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serving"))
from serving_models import tiny_wheel  # noqa: E402

UNDECLARED = """
import threadpoolctl

def model_fn(model_dir):
    return threadpoolctl.__version__

def predict_fn(data, model):
    return {"version": model}
"""
VENDORED = """
import smkit_fixture_dep

def model_fn(model_dir):
    return smkit_fixture_dep.VALUE

def predict_fn(data, model):
    return {"value": model}
"""
ERROR = "No module named 'threadpoolctl'"


def _archive(path: Path, files: dict[str, bytes]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _config(folder: Path, repo: Path, *, multi_model: bool) -> Path:
    model_data = (
        {"source": "multi-model", "path": "models"}
        if multi_model
        else {"source": "archive", "path": "models/model.tar.gz"}
    )
    data = {
        "name": "multi-env" if multi_model else "single-env",
        "environment": "dev",
        "image": {"source": "build", "context": str(repo), "dockerfile": "container/Dockerfile"},
        "model": {"network_isolation": False, "containers": [{"name": "echo", "model_data": model_data}]},
        "endpoint": {
            "type": "multi-model" if multi_model else "realtime",
            "variants": [{"name": "main", "instance_type": "ml.m5.large", "initial_instance_count": 1}],
        },
    }
    path = folder / f"{data['name']}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mme-env")
    _archive(root / "models" / "model.tar.gz", {"code/inference.py": UNDECLARED.encode()})
    wheel = tiny_wheel(root)
    _archive(
        root / "models" / "vendored.tar.gz",
        {
            "code/inference.py": VENDORED.encode(),
            "code/requirements.txt": b"smkit_fixture_dep==1.0\n",
            f"code/wheels/{wheel.name}": wheel.read_bytes(),
        },
    )
    return root


def test_an_undeclared_import_fails_a_multi_model_load_as_it_fails_a_single_model(repo, project) -> None:
    single = project / "single"
    single.mkdir()
    endpoint = LocalEndpoint(
        _config(project, repo, multi_model=False),
        root=project,
        log_dir=single,
        workers=1,
        startup_timeout_s=30,
    )
    with pytest.raises(LocalEndpointError):
        endpoint.start()
    assert ERROR in (single / "main-echo.log").read_text()

    multi = project / "multi"
    multi.mkdir()
    with LocalEndpoint(
        _config(project, repo, multi_model=True), root=project, log_dir=multi, workers=1
    ) as ep:
        with pytest.raises(ClientError) as info:
            ep.client().invoke_endpoint(
                EndpointName=ep.name, TargetModel="model.tar.gz", ContentType="application/json", Body=b"1"
            )
        assert info.value.response["Error"]["Code"] == "ModelError"
        assert ERROR in info.value.response["Error"]["Message"]
        # The container's interpreter is the image layer's, not smkit's.
        assert ep.runtime.variant("main").router.process.python != sys.executable
        # A model that declares and vendors its package is installed at its first load and served.
        answer = ep.client().invoke_endpoint(
            EndpointName=ep.name, TargetModel="vendored.tar.gz", ContentType="application/json", Body=b"1"
        )
        assert answer["Body"].read() == b'{"value": 42}'
