"""The image layer of a model's local environment lists what the serving image installs, no more, no less."""

from __future__ import annotations

from pathlib import Path

import pytest

from smkit.config import load_deployment
from smkit.modelenv import ImageRuntime, dlc_runtime
from smkit.modelenv.builder import CONTAINER_DIR, image_requirements

REPO = Path(__file__).resolve().parents[2]
PYTORCH = (
    "763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-inference:2.6.0-cpu-py312-ubuntu22.04-sagemaker"
)

HUGGINGFACE = (
    "763104351884.dkr.ecr.us-east-1.amazonaws.com/"
    "huggingface-pytorch-inference:2.6.0-transformers4.51.3-cpu-py312-ubuntu22.04"
)


def test_the_kits_image_layer_is_its_pinned_requirements_plus_the_extra_file(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("# runtime\nnumpy==2.4.6\nuvicorn==0.54.0  # server\n")
    (tmp_path / "requirements-extra.txt").write_text("# every model's\nlightgbm==4.7.0\n")
    assert image_requirements(ImageRuntime(), container_dir=tmp_path) == [
        "numpy==2.4.6",
        "uvicorn==0.54.0",
        "lightgbm==4.7.0",  # container/Dockerfile installs requirements-extra.txt too
    ]


def test_a_framework_image_gets_its_framework_and_not_the_kits_extra_file(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("numpy==2.4.6\n")
    (tmp_path / "requirements-extra.txt").write_text("lightgbm==4.7.0\n")
    runtime = dlc_runtime(PYTORCH)
    # The image's serving toolkit (sagemaker_inference too) and what its Dockerfile adds.
    image = ["sagemaker-pytorch-inference==2.0.25", "scikit-learn", "pandas"]
    assert image_requirements(runtime, container_dir=tmp_path) == ["numpy==2.4.6", "torch==2.6.0.*", *image]
    # A model pinning its own torch keeps that pin (no second torch in the layer).
    assert image_requirements(runtime, "torch==2.13.0\n", container_dir=tmp_path) == ["numpy==2.4.6", *image]
    # ... and so does one naming the toolkit (no second sagemaker_inference package).
    assert image_requirements(runtime, "sagemaker-inference==1.10.1\n", container_dir=tmp_path) == [
        "numpy==2.4.6",
        "torch==2.6.0.*",
        *image[1:],
    ]


@pytest.mark.parametrize(
    "uri",
    [
        "683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-scikit-learn:1.2-1-cpu-py3",
        "683313688378.dkr.ecr.us-east-1.amazonaws.com/sagemaker-xgboost:1.7-1",
    ],
)
def test_the_sklearn_and_xgboost_images_carry_sagemaker_inference(tmp_path: Path, uri: str) -> None:
    (tmp_path / "requirements.txt").write_text("numpy==2.4.6\n")
    assert "sagemaker-inference==1.5.5" in image_requirements(dlc_runtime(uri), container_dir=tmp_path)


def test_a_hugging_face_image_ships_torch_and_transformers_at_its_tags_versions(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("numpy==2.4.6\n")
    runtime = dlc_runtime(HUGGINGFACE)
    assert (runtime.framework, runtime.framework_version, runtime.transformers_version, runtime.python) == (
        "huggingface",
        "2.6.0",
        "4.51.3",
        "3.12",
    )
    assert image_requirements(runtime, container_dir=tmp_path) == [
        "numpy==2.4.6",
        "torch==2.6.0.*",
        "transformers==4.51.3.*",
    ]
    assert image_requirements(runtime, "transformers==4.57.6\n", container_dir=tmp_path) == [
        "numpy==2.4.6",
        "torch==2.6.0.*",
    ]


def test_the_checkout_is_read_by_default() -> None:
    assert CONTAINER_DIR == REPO / "container"
    pinned = (REPO / "container" / "requirements.txt").read_text().splitlines()
    lines = {line.split("#", 1)[0].strip() for line in pinned} - {""}
    assert lines and lines <= set(image_requirements(ImageRuntime()))


def test_a_config_with_image_requirements_adds_exactly_that_files_packages(tmp_path: Path) -> None:
    from smkit.modelenv import config_runtime

    (tmp_path / "requirements.txt").write_text("numpy==2.4.6\n")
    (tmp_path / "requirements-extra.txt").write_text("lightgbm==4.7.0\n")
    runtime = config_runtime(load_deployment(REPO / "config" / "multi-model.yaml"))
    sklearn = (REPO / "container" / "requirements-sklearn.txt").read_text().splitlines()
    expected = [line for line in sklearn if line and not line.startswith("#")]
    assert runtime.requirements == tuple(expected)
    assert image_requirements(runtime, container_dir=tmp_path) == [
        "numpy==2.4.6",
        "lightgbm==4.7.0",
        *expected,
    ]
    # Without image.requirements the layer is the kit's image alone.
    plain = config_runtime(load_deployment(REPO / "config" / "realtime.yaml"))
    assert image_requirements(plain, container_dir=tmp_path) == ["numpy==2.4.6", "lightgbm==4.7.0"]


def test_the_sklearn_image_file_satisfies_every_example_model_that_uses_it() -> None:
    """container/requirements-sklearn.txt pins what the examples' code/requirements.txt pin (none unmet)."""
    from packaging.requirements import Requirement

    image = {
        line.split("==")[0]: line.split("==")[1]
        for path in ("requirements.txt", "requirements-sklearn.txt")
        for line in (REPO / "container" / path).read_text().splitlines()
        if line and not line.startswith("#")
    }
    for model in ("iris", "featurizer", "regressor"):
        lines = (REPO / "model_code" / model / "code" / "requirements.txt").read_text().splitlines()
        for line in (x for x in lines if x and not x.startswith("#")):
            requirement = Requirement(line)
            assert requirement.name in image, f"model_code/{model}: {line} is not in the image"
            assert requirement.specifier.contains(image[requirement.name]), f"model_code/{model}: {line}"
