"""Configs the local endpoint (smkit.local.server) refuses instead of imitating: what it cannot run the way AWS would.

- An LLM engine image (AWS's LMI / DJL Serving or vLLM containers, Hugging Face TGI): the engine, its CUDA
  kernels and its OpenAI-style routes exist only inside that image on a GPU instance; the kit's serving
  runtime would answer with a different program.
- Adapter inference components (LoRA weights merged into a base component's model by that engine).

The refusal names the reason and the way out: deploy to AWS (or the emulator, which creates the resources
without running them), or test the model locally with a config of your own that serves a small model
through the kit's image. https://docs.aws.amazon.com/sagemaker/latest/dg/realtime-endpoints-adapt.html
"""

from __future__ import annotations

from smkit.config.models import DeploymentConfig

# ECR repository names of AWS's LLM serving images (the part of the URI between "/" and ":").
# https://github.com/aws/deep-learning-containers/blob/master/available_images.md
LLM_ENGINE_REPOSITORIES = ("djl-inference", "vllm", "huggingface-pytorch-tgi-inference", "sglang")


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
        if image is not None and image.source == "dlc" and (engine := llm_engine(image.uri)):
            return (
                f"{where} is AWS's {engine} LLM serving image, which runs only on a GPU instance on AWS; the "
                "local endpoint does not stand in for it with a different program. Deploy it (`cdk deploy`, "
                "or `smkit emulator deploy -c CONFIG` to check the resources), or test a small model locally with a "
                "config that serves it through the kit's image (README, 'Deploying an LLM')"
            )
    spec = config.endpoint.inference_components
    adapters = [c.name for c in spec.components if c.base_component is not None] if spec else []
    if adapters:
        return (
            f"endpoint.inference_components: {', '.join(adapters)} are adapter components, whose LoRA weights "
            "the base component's LLM engine merges on AWS; the local endpoint cannot run them. Remove them "
            "for a local run or deploy the config"
        )
    return None
