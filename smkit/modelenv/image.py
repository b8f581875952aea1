"""What the serving image gives a model: its Python version, its framework, CPU or GPU.

Read from the config's ``image`` (or the kit's own image when there is no config):

- ``build`` / ``ecr``: the kit's image (``container/Dockerfile``, ``FROM python:X.Y...``): the Python of the
  Dockerfile's last ``FROM python:`` line, no framework, CPU only; a ``build`` image also installs the
  packages of its ``requirements`` file (the Dockerfile's ``IMAGE_REQUIREMENTS``).
- ``dlc``: an AWS framework image, recognised by its repository name, with the Python version and device in
  its tag, e.g. ``pytorch-inference:2.6.0-cpu-py312-ubuntu22.04-sagemaker``. Image names and tags:
  https://github.com/aws/deep-learning-containers/blob/master/available_images.md and
  https://docs.aws.amazon.com/sagemaker/latest/dg-ecr-paths/sagemaker-algo-docker-registry-paths.html
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from smkit.config import DeploymentConfig, ImageSource

# The kit's image: container/Dockerfile starts FROM python:3.11.x (tests/serving/test_serving_container.py
# keeps the two in step).
KIT_PYTHON = "3.11"
# Repository name (without registry) -> framework whose toolkit's default handlers the image applies.
FRAMEWORK_REPOSITORIES = {
    "pytorch-inference": "pytorch",
    "sagemaker-xgboost": "xgboost",
    "sagemaker-scikit-learn": "sklearn",
    "tensorflow-inference": "tensorflow",
}
# The framework's package, pinned to the image's version when the model's requirements name none of its
# distributions (xgboost-cpu is XGBoost without the CUDA libraries).
FRAMEWORK_PACKAGES = {
    "pytorch": "torch",
    "xgboost": "xgboost",
    "sklearn": "scikit-learn",
    "tensorflow": "tensorflow",
}
FRAMEWORK_DISTRIBUTIONS = {
    "pytorch": ("torch",),
    "xgboost": ("xgboost", "xgboost-cpu"),
    "sklearn": ("scikit-learn",),
    "tensorflow": ("tensorflow", "tensorflow-cpu"),
}
# Images whose tags do not name their Python: the version their Dockerfiles install
# (aws/sagemaker-xgboost-container docker/*/base/Dockerfile.cpu PYTHON_VERSION).
TAG_PYTHON = {("xgboost", "1.7"): "3.10", ("xgboost", "3.0"): "3.10"}
_FROM_PYTHON = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?(?:\S+/)?python:(\d+\.\d+)", re.I | re.M)
_TAG_PYTHON = re.compile(r"-py(\d)(\d+)(?:-|$)")
_TAG_VERSION = re.compile(r"^(\d+(?:\.\d+){0,2})")


class ModelEnvError(RuntimeError):
    """The model's environment cannot be built; the message names the cause and the fix."""


@dataclass(frozen=True)
class ImageRuntime:
    """The parts of a serving image that decide how a model runs locally.

    Attributes:
        python: ``"3.11"``: the interpreter version the model's environment is built with.
        framework: ``pytorch``, ``xgboost``, ``sklearn``, ``tensorflow``, or None for the kit's image.
        framework_version: the framework version in the image tag (``"2.6.0"``), when known.
        gpu: whether the image is a GPU build.
        label: how messages name the image.
        requirements: the lines of the config's ``image.requirements`` file, which the image installs.
    """

    python: str = KIT_PYTHON
    framework: str | None = None
    framework_version: str | None = None
    gpu: bool = False
    label: str = "the kit's image (container/Dockerfile)"
    requirements: tuple[str, ...] = ()

    @property
    def framework_requirement(self) -> str | None:
        """``torch==2.6.0``: the framework package the image ships, or None."""
        if self.framework is None:
            return None
        package = FRAMEWORK_PACKAGES[self.framework]
        return f"{package}=={self.framework_version}.*" if self.framework_version else package


def dockerfile_python(dockerfile: Path) -> str | None:
    """The Python version of the last ``FROM python:X.Y`` line, or None."""
    try:
        text = dockerfile.read_text(encoding="utf-8")
    except OSError:
        return None
    found = _FROM_PYTHON.findall(text)
    return found[-1] if found else None


def dlc_runtime(uri: str) -> ImageRuntime:
    """Framework, version, Python and device of an AWS framework image URI."""
    repository, _, tag = uri.rpartition("/")[2].partition(":")
    framework = FRAMEWORK_REPOSITORIES.get(repository)
    version_match = _TAG_VERSION.match(tag)
    python_match = _TAG_PYTHON.search(tag)
    version = version_match.group(1) if version_match and framework else None
    if python_match:
        python = f"{python_match.group(1)}.{python_match.group(2)}"
    else:  # e.g. sagemaker-xgboost:1.7-1, sagemaker-scikit-learn:1.2-1-cpu-py3
        python = TAG_PYTHON.get((framework or "", ".".join((version or "").split(".")[:2])), KIT_PYTHON)
    return ImageRuntime(
        python=python,
        framework=framework,
        framework_version=version,
        gpu="-gpu" in tag or "-cu1" in tag,
        label=uri,
    )


def image_runtime(image: ImageSource | None) -> ImageRuntime:
    """The runtime of a config's image (the kit's image when ``image`` is None)."""
    if image is None or image.source == "ecr":
        return ImageRuntime()
    if image.source == "dlc":
        return dlc_runtime(image.uri)
    dockerfile = Path(image.context) / image.dockerfile
    python = dockerfile_python(dockerfile) or KIT_PYTHON
    if image.requirements is None:
        return ImageRuntime(python=python, label=str(dockerfile))
    return ImageRuntime(
        python=python,
        label=f"{dockerfile} with image.requirements {image.requirements}",
        requirements=tuple(requirement_lines(Path(image.requirements), field="image.requirements")),
    )


def requirement_lines(path: Path, *, field: str) -> list[str]:
    """The requirement lines of a pip requirements file (comments and blank lines dropped)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelEnvError(
            f"{field} {path}: cannot read it ({exc.strerror}); give a pip requirements file, relative to "
            "the config file"
        ) from None
    lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line]


def config_runtime(config: DeploymentConfig, container: str | None = None) -> ImageRuntime:
    """The runtime of ``container`` (by name; default the first) of ``config``."""
    containers = config.model.containers
    chosen = next((c for c in containers if c.name == container), containers[0])
    return image_runtime(chosen.image or config.image)
