"""Configs the local endpoint (smkit.local.endpoint_server) refuses instead of imitating: what it cannot run the way AWS would.

AWS's vLLM image runs locally: its own server from vLLM's CPU build (smkit.local.engines), with adapter
components loaded into it (smkit.local.engines). Refused, with the reason and the way out:

- AWS's LMI image (``djl-inference``): DJL Serving's Java front end and its Python engine process are
  published as a Docker image and Java distribution only, not on PyPI, so nothing but the image itself
  would run the same program; the kit does not stand in for it with a different one.
- Hugging Face TGI and SGLang images: their engines have no CPU build on PyPI that serves their routes.
- Adapter components whose base is not on AWS's vLLM image (only an engine loads LoRA weights).

The way out: the same model on AWS's vLLM image (the example config/llm.yaml), deploy (``cdk deploy``, or
``smkit emulator deploy -c CONFIG`` to check the resources), or a small model through the kit's image.
https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-adapt.html
"""

from __future__ import annotations

from smkit.config.models import DeploymentConfig

# ECR repository names of AWS's LLM serving images (the part of the URI between "/" and ":").
# https://github.com/aws/deep-learning-containers/blob/master/available_images.md
LLM_ENGINE_REPOSITORIES = ("djl-inference", "vllm", "huggingface-pytorch-tgi-inference", "sglang")
# The ones the local endpoint runs with their own engine (smkit.llm.engine.LOCAL_ENGINES).
LOCAL_ENGINE_REPOSITORIES = ("vllm",)
WHY_NOT = {
    "djl-inference": "DJL Serving (its Java front end and engine process) is published only as this image "
    "and a Java distribution: neither djl-serving nor djl-python is on PyPI, nor DJL Serving in Debian",
    "huggingface-pytorch-tgi-inference": "Text Generation Inference has no CPU build on PyPI",
    "sglang": "SGLang has no CPU build on PyPI",
}


def llm_engine(uri: str) -> str | None:
    """The repository name when ``uri`` is one of AWS's LLM serving images, else None."""
    repository = uri.rpartition("/")[2].partition(":")[0].partition("@")[0]
    return repository if repository in LLM_ENGINE_REPOSITORIES else None


def refusal(config: DeploymentConfig) -> str | None:
    """Why ``config`` cannot run locally (one sentence with the way out), or None when it can."""
    images = [("image", config.image)] + [
        (f"model.containers[{i}].image", c.image) for i, c in enumerate(config.model.containers)
    ]
    for where, image in images:
        engine = llm_engine(image.uri) if image is not None and image.source == "dlc" else None
        if engine is not None and engine not in LOCAL_ENGINE_REPOSITORIES:
            return (
                f"{where} is AWS's {engine} LLM serving image, which the local endpoint cannot run: "
                f"{WHY_NOT[engine]}; the local endpoint does not stand in for it with a different program. "
                "Serve the model with AWS's vLLM image instead (config/llm.yaml, docs/llm.md), which runs "
                "locally, or deploy it (`cdk deploy`, or `smkit emulator deploy -c CONFIG` to check the resources)"
            )
    spec = config.endpoint.inference_components
    if spec is None:
        return None
    containers = {c.name: config.image_of(c) for c in config.model.containers}
    by_name = {c.name: c for c in spec.components}
    for component in spec.components:
        base = by_name.get(component.base_component or "")
        if base is None or base.container is None:
            continue
        image = containers.get(base.container)
        if image is None or image.source != "dlc" or llm_engine(image.uri) not in LOCAL_ENGINE_REPOSITORIES:
            return (
                f"endpoint.inference_components: {component.name} is an adapter component of {base.name}, whose "
                "container does not run AWS's vLLM image; only that engine loads LoRA adapters locally. Serve "
                f"{base.name} with AWS's vLLM image (docs/llm.md), remove the adapter for a local run, or deploy"
            )
    return None
