"""Helpers of the LLM tests: config/llm.yaml pointed at the tiny model and adapter in the S3 stand-in, the
local endpoint started as every LLM test starts it, and the engine's own Prometheus counters."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import boto3
import yaml
from prometheus_client.parser import text_string_to_metric_families

from smkit.config import DeploymentConfig, parse_config
from smkit.emulator.moto_server import MotoServer
from smkit.local import LocalEndpoint
from smkit.packaging.folder import upload_folder_archive

REPO = Path(__file__).resolve().parents[2]
CONTEXT = 128  # SM_VLLM_MAX_MODEL_LEN of the tests: the tiny model's positions are 256
# vLLM's first load on 2 busy CPUs (compiling its CPU kernels' caches included) takes minutes.
STARTUP_S = 1200.0
IDLE_S = 24 * 3600.0  # a component that may scale to zero when idle does not during a test


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


def llm_endpoint(
    config: DeploymentConfig, root: Path, *, log_dir: Path | None = None, moto: MotoServer | None = None
) -> LocalEndpoint:
    """The local endpoint of ``config`` as the LLM tests run it: its scratch folder under ``root``, its logs in
    ``log_dir`` (default ``root``), S3 from ``moto`` (None: boto3's usual), :data:`STARTUP_S` for the engine's
    first start and no component scaled to zero while the test runs."""
    return LocalEndpoint(
        config,
        root=root,
        log_dir=log_dir or root,
        s3_endpoint_url=moto.endpoint_url if moto is not None else None,
        startup_timeout_s=STARTUP_S,
        component_idle_seconds=IDLE_S,
    )


def counter(metrics: str, name: str) -> float:
    """The sum of every sample ``name`` (e.g. ``vllm:spec_decode_num_draft_tokens_total``, all label sets)
    in ``metrics``, Prometheus's text format as the engine's ``/metrics`` answers it."""
    return sum(
        sample.value
        for family in text_string_to_metric_families(metrics)
        for sample in family.samples
        if sample.name == name
    )
