"""Helpers of the LLM tests: config/llm.yaml pointed at the tiny model and adapter in the S3 stand-in."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import boto3
import yaml

from smkit.config import DeploymentConfig, parse_config
from smkit.emulator.moto_server import MotoServer
from smkit.packaging.folder import upload_folder_archive

REPO = Path(__file__).resolve().parents[2]
CONTEXT = 128  # SM_VLLM_MAX_MODEL_LEN of the tests: the tiny model's positions are 256
# vLLM's first load on 2 busy CPUs (compiling its CPU kernels' caches included) takes minutes.
STARTUP_S = 1200.0


def upload(s3: Any, folder: Path, bucket: str, prefix: str) -> str:
    """Upload every file of ``folder`` under ``s3://bucket/prefix/``; the prefix URI."""
    for path in folder.rglob("*"):
        if path.is_file():
            s3.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(folder).as_posix()}")
    return f"s3://{bucket}/{prefix}/"


def llm_config(moto: MotoServer, tiny: dict[str, Path], **environment: str) -> DeploymentConfig:
    """config/llm.yaml with the tiny model and adapter (in the S3 stand-in) in place of the weights."""
    return parse_config(
        llm_data(moto, tiny, **environment), source="config/llm.yaml (tiny model)", base_dir=REPO / "config"
    )


def llm_data(moto: MotoServer, tiny: dict[str, Path], **environment: str) -> dict[str, Any]:
    """config/llm.yaml with the tiny model and adapter (in the S3 stand-in) in place of the weights."""
    s3 = boto3.client("s3", endpoint_url=moto.endpoint_url, region_name=moto.region)
    bucket = f"llm-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    data = yaml.safe_load((REPO / "config" / "llm.yaml").read_text())
    container = data["model"]["containers"][0]
    container["model_data"] = {"source": "s3", "uri": upload(s3, tiny["model"], bucket, "tiny")}
    container["environment"] = {
        **container["environment"],
        "SM_VLLM_MAX_MODEL_LEN": str(CONTEXT),
        **environment,
    }
    for component in data["endpoint"]["inference_components"]["components"]:
        if component.get("base_component"):
            component["artifact_url"] = upload_folder_archive(
                s3, tiny["adapter"], bucket, "adapters/support.tar.gz"
            )
    return data
