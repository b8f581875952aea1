"""Network isolation locally as on AWS: a container whose code/requirements.txt neither the archive's wheels
nor the image provide is refused before it starts; the same model with the package in the config's
image.requirements serves."""

from __future__ import annotations

import io
import json
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from smkit.cli import main
from smkit.local import LocalEndpoint, LocalEndpointError

# Small, pure Python, and not in the kit's image (container/requirements*.txt).
PACKAGE = "threadpoolctl==3.8.0"
HANDLER = """
import json

import threadpoolctl


def model_fn(model_dir):
    return threadpoolctl.__version__


def input_fn(body, content_type):
    return json.loads(body)


def predict_fn(data, model):
    return {"threadpoolctl": model, "echo": data}


def output_fn(prediction, accept):
    return json.dumps(prediction).encode(), "application/json"
"""


def _archive(path: Path) -> Path:
    """A model.tar.gz with code/inference.py and code/requirements.txt naming PACKAGE (no code/wheels)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    files = {"code/inference.py": HANDLER, "code/requirements.txt": f"# the handler imports it\n{PACKAGE}\n"}
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _config(folder: Path, repo: Path, *, requirements: str | None, multi_model: bool = False) -> Path:
    """A user's config beside the model: isolated, the kit's image built from the repository."""
    image = {"source": "build", "context": str(repo), "dockerfile": "container/Dockerfile"}
    if requirements is not None:
        # The requirements file must be inside the build context (docker build copies it): the user's
        # folder is the context, holding a copy of the kit's Dockerfile.
        (folder / "Dockerfile").write_text((repo / "container" / "Dockerfile").read_text())
        (folder / "image-requirements.txt").write_text(f"{requirements}\n")
        image = {"source": "build", "context": ".", "requirements": "image-requirements.txt"}
    model_data = (
        {"source": "multi-model", "path": "models"}
        if multi_model
        else {"source": "archive", "path": "model.tar.gz"}
    )
    data = {
        "name": "isolated-demo",
        "environment": "dev",
        "image": image,
        "model": {"network_isolation": True, "containers": [{"name": "echo", "model_data": model_data}]},
        "endpoint": {
            "type": "multi-model" if multi_model else "realtime",
            "variants": [{"name": "main", "instance_type": "ml.m5.large", "initial_instance_count": 1}],
        },
    }
    path = folder / "isolated.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _refusal_lines(message: str) -> None:
    assert "container main-echo" in message, message
    assert repr(PACKAGE) in message, message
    assert "smkit package --config CONFIG" in message, message
    assert "image.requirements" in message, message
    assert "model.network_isolation off" in message, message


def test_an_isolated_model_needing_a_package_the_image_lacks_is_refused(repo, tmp_path):
    _archive(tmp_path / "model.tar.gz")
    endpoint = LocalEndpoint(_config(tmp_path, repo, requirements=None), root=tmp_path, log_dir=tmp_path)
    with pytest.raises(LocalEndpointError) as info:
        endpoint.start()
    _refusal_lines(str(info.value))
    assert not endpoint.serving
    assert not endpoint.runtime.workdir.exists()


def test_a_multi_model_prefix_is_checked_archive_by_archive(repo, tmp_path):
    _archive(tmp_path / "models" / "echo.tar.gz")
    config = _config(tmp_path, repo, requirements=None, multi_model=True)
    with pytest.raises(LocalEndpointError) as info:
        LocalEndpoint(config, root=tmp_path, log_dir=tmp_path).start()
    _refusal_lines(str(info.value))
    assert "echo.tar.gz's code/requirements.txt" in str(info.value)


def test_smkit_serve_with_an_isolated_config_refuses_too(repo, tmp_path):
    archive = _archive(tmp_path / "model.tar.gz")
    config = _config(tmp_path, repo, requirements=None)
    result = CliRunner().invoke(main, ["serve", "--model", str(archive), "--config", str(config)])
    assert result.exit_code == 1, result.output
    assert repr(PACKAGE) in result.output and "smkit package --config CONFIG" in result.output


def test_the_same_model_serves_with_the_package_in_the_image_requirements(repo, tmp_path, capfd):
    _archive(tmp_path / "model.tar.gz")
    config = _config(tmp_path, repo, requirements=PACKAGE)
    with LocalEndpoint(config, root=tmp_path, log_dir=tmp_path) as endpoint:
        response = endpoint.client().invoke_endpoint(
            EndpointName=endpoint.name, ContentType="application/json", Body=b"[1, 2]"
        )
        assert json.loads(response["Body"].read()) == {"threadpoolctl": "3.8.0", "echo": [1, 2]}
    assert "network isolation" not in capfd.readouterr().err


def _package(folder: Path, config: Path) -> tuple[Path, str]:
    """``smkit package --config`` of the echo model; returns the archive and the command's stderr."""
    code, artifacts = folder / "src" / "code", folder / "src" / "artifacts"
    code.mkdir(parents=True)
    artifacts.mkdir()
    (artifacts / "weights.txt").write_text("none\n")
    (code / "inference.py").write_text(HANDLER)
    (code / "requirements.txt").write_text(f"{PACKAGE}\n")
    archive = folder / "model.tar.gz"
    result = CliRunner().invoke(
        main,
        ["package", "--code", str(code), "--artifacts", str(artifacts), "--output", str(archive)]
        + ["--config", str(config)],
    )
    assert result.exit_code == 0, result.output + result.stderr
    return archive, result.stderr


def _wheels(archive: Path) -> list[str]:
    with tarfile.open(archive) as tar:
        return [m.name for m in tar if m.name.startswith("code/wheels/")]


@pytest.mark.parametrize("in_image", [False, True], ids=["vendored", "in-image"])
def test_the_packager_and_the_local_endpoint_agree_on_what_the_image_provides(repo, tmp_path, in_image):
    """Not in the image: the wheel is vendored and installed offline. In the image: nothing vendored."""
    config = _config(tmp_path, repo, requirements=PACKAGE if in_image else None)
    archive, stderr = _package(tmp_path, config)
    if in_image:
        assert _wheels(archive) == [] and "provides every line of code/requirements.txt" in stderr
    else:
        # The wheel, and the bytecode of the module the handler imports from it (smkit/packaging/bytecode.py).
        assert [Path(w).name for w in _wheels(archive)] == [
            f"bytecode.{sys.implementation.cache_tag}.zip",
            "threadpoolctl-3.8.0-py3-none-any.whl",
        ]
    with LocalEndpoint(config, root=tmp_path, log_dir=tmp_path) as endpoint:
        response = endpoint.client().invoke_endpoint(
            EndpointName=endpoint.name, ContentType="application/json", Body=b"{}"
        )
        assert json.loads(response["Body"].read())["threadpoolctl"] == "3.8.0"


def _plain_archive(path: Path) -> Path:
    """A model.tar.gz whose handler needs nothing the image lacks (no code/requirements.txt)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (
        HANDLER.replace("import threadpoolctl\n", "").replace("threadpoolctl.__version__", "'none'").encode()
    )
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("code/inference.py")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


def _second_model_config(folder: Path, repo: Path, kind: str) -> Path:
    """Isolated, production model ``main`` plain, model ``echo`` needing PACKAGE: a shadow's or a component's."""
    _plain_archive(folder / "plain.tar.gz")
    _archive(folder / "model.tar.gz")
    containers = [
        {"name": "main", "model_data": {"source": "archive", "path": "plain.tar.gz"}},
        {"name": "echo", "model_data": {"source": "archive", "path": "model.tar.gz"}},
    ]
    variant = {"name": "main", "instance_type": "ml.m5.xlarge", "initial_instance_count": 1}
    endpoint: dict[str, object]
    if kind == "shadow":
        endpoint = {
            "type": "realtime",
            "variants": [variant],
            "shadow_variants": [
                {
                    "name": "shadow",
                    "container": "echo",
                    "instance_type": "ml.m5.large",
                    "initial_instance_count": 1,
                    "sampling_percentage": 50,
                }
            ],
            "data_capture": {"enabled": True, "sampling_percentage": 100, "capture": ["input", "output"]},
        }
    else:
        compute = {"cpu_cores": 1, "min_memory_mb": 512}
        endpoint = {
            "type": "inference-components",
            "variants": [variant],
            "inference_components": {
                "instance_scaling": {"min_instances": 1, "max_instances": 1},
                "components": [
                    {"name": name, "container": name, "compute": compute, "copies": 1}
                    for name in ("main", "echo")
                ],
            },
        }
    data = {
        "name": f"isolated-{kind}",
        "environment": "dev",
        "image": {"source": "build", "context": str(repo), "dockerfile": "container/Dockerfile"},
        "model": {"network_isolation": True, "containers": containers},
        "endpoint": endpoint,
    }
    path = folder / f"{kind}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("kind", ["shadow", "component"])
def test_a_shadow_or_component_model_the_image_cannot_serve_is_refused_too(repo, tmp_path, kind):
    """Every container the endpoint starts gets its model environment, not only the production variant's."""
    config = _second_model_config(tmp_path, repo, kind)
    endpoint = LocalEndpoint(config, root=tmp_path, log_dir=tmp_path)
    with pytest.raises(LocalEndpointError) as info:
        endpoint.start()
    message = str(info.value)
    assert "-echo" in message and repr(PACKAGE) in message, message
    assert "smkit package --config CONFIG" in message, message
    assert not endpoint.serving
