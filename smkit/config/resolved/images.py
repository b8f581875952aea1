"""Which image a container runs, and what that image gives its model: decided here, once per container.

- ``build``: the kit's image (no ``context``: smkit.dockerimage stages its context from the installed
  package) or the user's Dockerfile, built as a CDK Docker asset; its context, Dockerfile,
  ignore patterns and build arguments (``IMAGE_REQUIREMENTS`` for ``image.requirements``).
- ``ecr``: an immutable tag in this deployment's own ECR repository (the kit's image).
- ``dlc``: a full image URI, e.g. an AWS Deep Learning Container, recognised by its repository name, with
  the Python version and device in its tag, e.g. ``pytorch-inference:2.6.0-cpu-py312-ubuntu22.04-sagemaker``.
  Image names and tags: https://github.com/aws/deep-learning-containers/blob/master/available_images.md and
  https://docs.aws.amazon.com/sagemaker/latest/dg-ecr-paths/sagemaker-algo-docker-registry-paths.html

:class:`ImageRuntime` is what the local model environments (smkit.modelenv) and the packager need: Python
version, framework defaults, CPU or GPU, and the packages ``image.requirements`` adds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from smkit.config.containers import BuildImage, ImageSource
from smkit.dockerimage import IMAGE_REQUIREMENTS_ARG, KIT_DOCKERFILE, container_dir
from smkit.requirement_lines import file_lines

# The kit's image: container/Dockerfile starts FROM python:3.11.x (tests/serving/test_serving_container.py
# keeps the two in step).
KIT_PYTHON = "3.11"
# Repository name (without registry) -> framework whose toolkit's default handlers the image applies.
FRAMEWORK_REPOSITORIES = {
    "pytorch-inference": "pytorch",
    "sagemaker-xgboost": "xgboost",
    "sagemaker-scikit-learn": "sklearn",
    "tensorflow-inference": "tensorflow",
    "huggingface-pytorch-inference": "huggingface",
}
# The framework's packages, each pinned to the image's version when the model's requirements name none of
# its distributions (xgboost-cpu is XGBoost without the CUDA libraries). The first carries the tag's
# leading version; the Hugging Face images name their transformers version in the tag too
# (huggingface-pytorch-inference:2.6.0-transformers4.51.3-cpu-py312-ubuntu22.04).
FRAMEWORK_PACKAGES = {
    "pytorch": ("torch",),
    "xgboost": ("xgboost",),
    "sklearn": ("scikit-learn",),
    "tensorflow": ("tensorflow",),
    "huggingface": ("torch", "transformers"),
}
PACKAGE_DISTRIBUTIONS = {
    "torch": ("torch",),
    "xgboost": ("xgboost", "xgboost-cpu"),
    "scikit-learn": ("scikit-learn",),
    "tensorflow": ("tensorflow", "tensorflow-cpu"),
    "transformers": ("transformers",),
}
# What else an AWS framework image installs that handlers import by name: its serving toolkit
# (``from sagemaker_inference import encoder``, as JumpStart's scripts do) at the version the image ships, and
# the libraries its Dockerfile adds. Each: the requirement and the distributions that provide it (a model's
# requirements naming one of them win).
# - PyTorch: aws/deep-learning-containers pytorch/inference/docker/2.6/py3/Dockerfile.cpu installs
#   sagemaker-pytorch-inference at SM_TOOLKIT_VERSION (2.0.25 in Dockerfile.sagemaker.cpu.core_packages.json;
#   that distribution carries the sagemaker_inference package too), scikit-learn and pandas.
# - scikit-learn: aws/sagemaker-scikit-learn-container requirements.txt (sagemaker-inference==1.5.5, pandas).
# - XGBoost: aws/sagemaker-xgboost-container requirements.txt (sagemaker-inference==1.5.5).
IMAGE_PACKAGES: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "pytorch": (
        ("sagemaker-pytorch-inference==2.0.25", ("sagemaker-pytorch-inference", "sagemaker-inference")),
        ("scikit-learn", ("scikit-learn",)),
        ("pandas", ("pandas",)),
    ),
    "sklearn": (("sagemaker-inference==1.5.5", ("sagemaker-inference",)), ("pandas", ("pandas",))),
    "xgboost": (("sagemaker-inference==1.5.5", ("sagemaker-inference",)),),
}
# Images whose tags do not name their Python: the version their Dockerfiles install
# (aws/sagemaker-xgboost-container docker/*/base/Dockerfile.cpu PYTHON_VERSION).
TAG_PYTHON = {("xgboost", "1.7"): "3.10", ("xgboost", "3.0"): "3.10"}
_FROM_PYTHON = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?(?:\S+/)?python:(\d+\.\d+)", re.I | re.M)
_TAG_PYTHON = re.compile(r"-py(\d)(\d+)(?:-|$)")
_TAG_VERSION = re.compile(r"^(\d+(?:\.\d+){0,2})")
_TAG_TRANSFORMERS = re.compile(r"-transformers(\d+(?:\.\d+){0,2})")


@dataclass(frozen=True)
class ImageRuntime:
    """The parts of a serving image that decide how a model runs locally.

    Attributes:
        python: ``"3.11"``: the interpreter version the model's environment is built with.
        framework: ``pytorch``, ``xgboost``, ``sklearn``, ``tensorflow``, ``huggingface``, or None for the
            kit's image.
        framework_version: the framework version in the image tag (``"2.6.0"``), when known.
        transformers_version: the transformers version in a Hugging Face image's tag (``"4.51.3"``).
        gpu: whether the image is a GPU build.
        label: how messages name the image.
        requirements: the lines of the config's ``image.requirements`` file, which the image installs.
    """

    python: str = KIT_PYTHON
    framework: str | None = None
    framework_version: str | None = None
    transformers_version: str | None = None
    gpu: bool = False
    label: str = "the kit's image (container/Dockerfile)"
    requirements: tuple[str, ...] = ()

    @property
    def framework_requirements(self) -> list[tuple[str, tuple[str, ...]]]:
        """``[("torch==2.6.0.*", ("torch",)), ...]``: each framework package the image ships, then its serving
        toolkit and libraries (:data:`IMAGE_PACKAGES`), and the distributions of each."""
        if self.framework is None:
            return []
        versions = [self.framework_version, self.transformers_version]
        packages = [
            (f"{package}=={version}.*" if version else package, PACKAGE_DISTRIBUTIONS[package])
            for package, version in zip(FRAMEWORK_PACKAGES[self.framework], versions, strict=False)
        ]
        return [*packages, *IMAGE_PACKAGES.get(self.framework, ())]


@dataclass(frozen=True)
class ResolvedImage:
    """The image one container runs.

    Attributes:
        source: ``build`` (a Docker asset), ``ecr`` (this deployment's repository) or ``dlc`` (a full URI).
        runtime: what the image gives the model (Python, framework defaults, image requirements).
        uri: ``dlc`` only: the image URI.
        tag: ``ecr`` only: the immutable tag in this deployment's repository.
        context / dockerfile / exclude / build_args: ``build`` only: the absolute build context (None: the
            kit's image, whose context smkit.dockerimage stages), the
            Dockerfile relative to it, the ignore patterns of ``<dockerfile>.dockerignore`` (empty: none)
            and the build arguments, ``IMAGE_REQUIREMENTS`` included.
        requirements_file: ``build`` only: the absolute ``image.requirements`` file, if any.
    """

    source: Literal["build", "ecr", "dlc"]
    runtime: ImageRuntime = field(default_factory=ImageRuntime)
    uri: str | None = None
    tag: str | None = None
    context: Path | None = None
    dockerfile: str = "Dockerfile"
    exclude: tuple[str, ...] = ()
    build_args: Mapping[str, str] = field(default_factory=dict)
    requirements_file: Path | None = None

    @property
    def uses_repository(self) -> bool:
        """Pulled from (``ecr``) or published to (``build``, the CI path) this deployment's repository."""
        return self.source != "dlc"

    @property
    def key(self) -> str:
        """Equal for containers that run the same image (the stacks build or name it once)."""
        args = ",".join(f"{k}={v}" for k, v in sorted(self.build_args.items()))
        return f"{self.source}|{self.uri}|{self.tag}|{self.context}|{self.dockerfile}|{args}|{self.requirements_file}"


class ImageError(ValueError):
    """The image section names something unusable; ``field`` and ``value`` say what, the message the fix."""

    def __init__(self, field_: str, value: object, message: str) -> None:
        super().__init__(message)
        self.field = field_
        self.value = value
        self.message = message


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
    transformers = _TAG_TRANSFORMERS.search(tag) if framework == "huggingface" else None
    return ImageRuntime(
        python=python,
        framework=framework,
        framework_version=version,
        transformers_version=transformers.group(1) if transformers else None,
        gpu="-gpu" in tag or "-cu1" in tag,
        label=uri,
    )


def dockerignore(path: Path) -> list[str]:
    """Patterns of a Dockerfile-specific ignore file (BuildKit's ``<Dockerfile>.dockerignore``), if any."""
    if not path.is_file():
        return []
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


KIT_IMAGE_LABEL = "the kit's image (container/Dockerfile)"


def resolve_image(image: ImageSource, *, where: str) -> ResolvedImage:
    """The image ``image`` names (its paths already absolute,
    :func:`~smkit.config.resolved.paths.with_absolute_paths`); no ``context`` is the kit's own image.
    Raises :class:`ImageError` for ``where``'s fields."""
    if image.source == "ecr":  # in this deployment's own repository (smkit.config.image_rules.image_tags)
        return ResolvedImage("ecr", tag=image.tag)
    if image.source == "dlc":
        return ResolvedImage("dlc", runtime=dlc_runtime(image.uri), uri=image.uri)
    if image.context is None:
        return _kit_image(image, where=where)
    context = Path(image.context)
    dockerfile = context / image.dockerfile
    python = dockerfile_python(dockerfile) or KIT_PYTHON
    exclude = dockerignore(context / f"{image.dockerfile}.dockerignore")
    build_args = dict(image.build_args)
    runtime = _build_runtime(image, python, str(dockerfile), where)  # a missing requirements file: first
    requirements = None
    if image.requirements is not None:
        requirements = Path(image.requirements)
        relative = _inside_context(requirements, context, where, image.requirements)
        build_args[IMAGE_REQUIREMENTS_ARG] = relative
        if exclude:  # the ignore file lets through only what the Dockerfile copies: add this file
            exclude.append(f"!{relative}")
    return ResolvedImage(
        "build",
        runtime,
        context=context,
        dockerfile=image.dockerfile,
        exclude=tuple(exclude),
        build_args=build_args,
        requirements_file=requirements,
    )


def _kit_image(image: BuildImage, *, where: str) -> ResolvedImage:
    """The kit's own image (no ``context``): smkit.dockerimage stages its context, from any folder."""
    python = dockerfile_python(container_dir() / "Dockerfile") or KIT_PYTHON
    return ResolvedImage(
        "build",
        _build_runtime(image, python, None, where),
        dockerfile=KIT_DOCKERFILE,
        build_args=dict(image.build_args),
        requirements_file=Path(image.requirements) if image.requirements is not None else None,
    )


def _build_runtime(image: BuildImage, python: str, label: str | None, where: str) -> ImageRuntime:
    """A built image's runtime (``label``: its Dockerfile; None: the kit's), with the packages of
    ``image.requirements`` when it names a file."""
    if image.requirements is None:
        return ImageRuntime(python=python) if label is None else ImageRuntime(python=python, label=label)
    return ImageRuntime(
        python=python,
        label=f"{label or KIT_IMAGE_LABEL} with image.requirements {image.requirements}",
        requirements=_requirement_lines(Path(image.requirements), where, image.requirements),
    )


def _inside_context(path: Path, context: Path, where: str, written: str) -> str:
    """``path`` as the POSIX path inside the build context that docker build copies."""
    try:
        return path.relative_to(context).as_posix()
    except ValueError:
        raise ImageError(
            f"{where}.requirements",
            written,
            f"outside image.context {context}, so docker build cannot copy it; move the file into the "
            "context (e.g. beside the config file in the repository)",
        ) from None


def _requirement_lines(path: Path, where: str, written: str) -> tuple[str, ...]:
    if not path.is_file():
        raise ImageError(
            f"{where}.requirements",
            written,
            "no such file; give a pip requirements file, relative to the config file",
        )
    try:
        return tuple(file_lines(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise ImageError(
            f"{where}.requirements",
            written,
            f"cannot read it ({exc}); give a pip requirements file (UTF-8), relative to the config file",
        ) from None
