"""``smkit init NAME --framework vllm``: a deployment config for an LLM on AWS's vLLM image, no handler code.

The config (``config/NAME.yaml``) hosts the model as inference components on one GPU instance: a base
component running the model folder ``model_code/NAME/model`` and an adapter component with the LoRA adapter
folder ``model_code/NAME/adapter``, both local folders (``smkit package`` archives the adapter, deploy
uploads both). ``python -m smkit.llm.tiny model_code/NAME`` builds a tiny model and adapter there from random
weights (no download); a real model goes there with ``save_pretrained()``. ``config/llm.yaml`` of the kit's
repository is this config with a real model's weights and adapter in S3 (docs/llm.md says what differs).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from smkit.llm.tiny import CONTEXT


@dataclass(frozen=True)
class LlmFramework:
    """An LLM serving image ``smkit init`` writes a config for."""

    config: str  # the config's text; {name}, {context} are filled in
    next_steps: str  # what to run next; {name}, {config} are filled in


VLLM_CONFIG = """\
# {name}: an LLM on AWS's vLLM image (vLLM's own OpenAI-compatible server with SageMaker's /ping,
# /invocations and adapter routes), as inference components on one GPU instance: the base model and a LoRA
# adapter that shares its GPU. Written by `smkit init {name} --framework vllm`; paths are relative to this
# file. The model and the adapter are local folders: `python -m smkit.llm.tiny model_code/{name}` builds
# tiny ones (random weights, no download), or save_pretrained() yours there (docs/llm.md).
# smkit package --config config/{name}.yaml (archives the adapter), smkit local-endpoint --config ...
# (vLLM's CPU build), smkit synth --config ... (offline), smkit deploy --config ... (uploads both).
name: {name}
environment: dev
region: us-east-1           # the image URI below is us-east-1's: the loader checks they match
tags:
  project: {name}

image:
  # AWS's vLLM image for SageMaker: https://aws.github.io/deep-learning-containers/vllm/deployment/sagemaker/
  source: dlc
  uri: 763104351884.dkr.ecr.us-east-1.amazonaws.com/vllm:server-sagemaker-cuda-v1

model:
  network_isolation: true    # the weights come with the model data; the container needs no internet
  containers:
    - name: {name}
      model_data:
        # The model folder (config.json, *.safetensors, tokenizer), uploaded uncompressed by deploy. Weights
        # already in S3 instead: source: s3, uri: s3://BUCKET/PREFIX/
        source: prefix
        path: ../model_code/{name}/model
      environment:                    # SM_VLLM_<NAME> -> vLLM's --<name> (docs/llm.md, "Engine settings")
        SM_VLLM_MAX_MODEL_LEN: "{context}"   # at most the model's context (config.json); checked at load
        SM_VLLM_ENABLE_LORA: "true"    # adapters of this base are LoRA weights applied by vLLM per request
        SM_VLLM_MAX_LORAS: "4"
        SM_VLLM_MAX_LORA_RANK: "64"    # at least every adapter's rank (r in adapter_config.json)
        VLLM_ALLOW_RUNTIME_LORA_UPDATING: "true"   # the adapter components load through POST /adapters
        SAGEMAKER_ENABLE_STATEFUL_SESSIONS: "true"  # sticky sessions (docs/llm.md, "Sticky sessions")

endpoint:
  type: inference-components
  variants:
    - name: gpu
      instance_type: ml.g5.2xlarge     # 1 NVIDIA A10G (24 GB), 8 vCPUs, 32 GiB
      initial_instance_count: 1
      inference_ami_version: al2-ami-sagemaker-inference-gpu-3-1
      routing: least-outstanding-requests
  inference_components:
    instance_scaling:        # ManagedInstanceScaling: releases the GPU instance once no copy runs
      min_instances: 0
      max_instances: 2
    components:
      - name: {name}
        container: {name}
        compute: {{accelerators: 1, cpu_cores: 4, min_memory_mb: 16384}}
        copies: 1
        model_data_download_timeout_seconds: 1200
        container_startup_health_check_timeout_seconds: 1200
        scheduling:                        # pack copies so idle instances can be released,
          placement: binpack
          max_az_imbalance: 100            # and let packing outweigh Availability Zone balance
        data_cache: true                   # keep weights and image on the instance for faster new copies
        autoscaling:
          min_copies: 0      # scale to zero; the NoCapacityInvocationFailures alarm brings a copy back
          max_copies: 2
          target_invocations_per_copy: 10
      - name: {name}-adapter # a LoRA adapter on the {name} component: its GPU, copies and engine
        base_component: {name}
        # The adapter folder (adapter_config.json, adapter_model.safetensors): `smkit package` archives it
        # into ../build/{name}/adapters/{name}-adapter.tar.gz, which deploy uploads. Already in S3 instead:
        # artifact_url: s3://BUCKET/KEY.tar.gz
        artifact_path: ../model_code/{name}/adapter
    # No rolling_update: a rolling batch must be 5-50% of the component's copies, and {name} runs 0 or 1 copy
    # (no whole copy is 50% of one); a changed component is replaced by SageMaker's default update.

security:
  kms:
    create: true

monitoring:
  alarms: true
  latency_p99_ms: 20000      # a generation of a few hundred tokens
"""

VLLM_NEXT = (
    "next, build a tiny model and adapter (random weights, no download; the first run builds vLLM's CPU "
    "engine environment, cached): python -m smkit.llm.tiny model_code/{name}\n"
    "or bring yours: save_pretrained() the model and tokenizer into model_code/{name}/model and the PEFT "
    "adapter into model_code/{name}/adapter, and set SM_VLLM_MAX_MODEL_LEN in {config}\n"
    "then: smkit package --config {config}; smkit local-endpoint --config {config}; "
    "smkit synth --config {config}; smkit deploy --config {config}"
)

LLM_FRAMEWORKS: dict[str, LlmFramework] = {"vllm": LlmFramework(VLLM_CONFIG, VLLM_NEXT)}


def llm_config(framework: str, name: str) -> str:
    """The config text ``smkit init NAME --framework FRAMEWORK`` writes for an LLM framework."""
    return LLM_FRAMEWORKS[framework].config.format(name=name, context=CONTEXT)


def next_steps(framework: str, name: str, config: Path) -> str:
    """What to run after ``smkit init`` wrote ``config``."""
    return LLM_FRAMEWORKS[framework].next_steps.format(name=name, config=config)
