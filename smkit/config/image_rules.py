"""Rules of a config's images: tags and repositories the stacks can pull, a Dockerfile with its context, and
an image that can run on the instance type (the kit's image is CPU-only).

Each rule is a pure function ``(cfg) -> Iterable[Issue]``; :data:`IMAGE_RULES` is applied by the loader
(smkit/config/loader.py) with the other tables.
"""

from __future__ import annotations

from collections.abc import Iterable

from smkit.aws.instances import is_accelerated
from smkit.config.containers import BuildImage
from smkit.config.models import DeploymentConfig
from smkit.config.rules import Issue, Rule
from smkit.dockerimage import IMAGE_REQUIREMENTS_ARG


def image_tags(cfg: DeploymentConfig) -> Iterable[Issue]:
    for path, image in cfg.image_sections():
        if image.source == "ecr" and image.tag == "latest":
            yield Issue(
                f"{path}.tag",
                "latest",
                "the repository has immutable tags; use the content-hash tag printed by scripts/publish_image.py",
            )
        if image.source == "ecr" and image.repository is not None:
            yield Issue(
                f"{path}.repository",
                image.repository,
                "the stacks pull from this deployment's own ECR repository; remove image.repository (or use "
                "source: dlc with the full image uri)",
            )
        if image.source == "build" and image.requirements and IMAGE_REQUIREMENTS_ARG in image.build_args:
            yield Issue(
                f"{path}.build_args.{IMAGE_REQUIREMENTS_ARG}",
                image.build_args[IMAGE_REQUIREMENTS_ARG],
                f"{path}.requirements sets this build argument; keep one of the two",
            )
        if (
            image is not None
            and image.source == "build"
            and image.context is None
            and image.dockerfile != BuildImage.model_fields["dockerfile"].default
        ):
            yield Issue(
                f"{path}.dockerfile",
                image.dockerfile,
                f"a Dockerfile of your own needs {path}.context (its build context, relative to the config "
                "file); without context the kit's image is built",
            )


GPU_IMAGE_EXAMPLE = (
    "763104351884.dkr.ecr.REGION.amazonaws.com/pytorch-inference:2.6.0-gpu-py312-cu124-ubuntu22.04-sagemaker"
)


def gpu_images(cfg: DeploymentConfig) -> Iterable[Issue]:
    """A GPU or accelerator instance type needs an image built for it (the kit's image is CPU-only)."""
    images = [cfg.image_of(c) for c in cfg.model.containers]
    cpu_only = [
        img.uri if img.source == "dlc" else "the kit's image"
        for img in images
        if img.source != "dlc" or "-cpu" in img.uri.rpartition(":")[2]
    ]
    if not cpu_only:
        return
    for i, v in enumerate(cfg.endpoint.variants):
        for j, instance_type in enumerate(v.pool_types):
            if not is_accelerated(instance_type):
                continue
            pools = sorted(v.instance_pools or (), key=lambda p: p.priority)
            yield Issue(
                f"endpoint.variants[{i}].instance_pools[{v.instance_pools.index(pools[j])}].instance_type"
                if v.instance_pools
                else f"endpoint.variants[{i}].instance_type",
                instance_type,
                f"needs a GPU/accelerator image, but {cpu_only[0]} is CPU-only; use a CPU instance type such as "
                f"ml.m5.xlarge or ml.c5.xlarge, or a GPU image (image: {{source: dlc, uri: {GPU_IMAGE_EXAMPLE}}})",
            )


IMAGE_RULES: tuple[Rule, ...] = (image_tags, gpu_images)
