"""Speculative decoding on the local engine: ``SM_VLLM_SPECULATIVE_CONFIG`` (vLLM's ``--speculative-config``)
run by vLLM's CPU build on the tiny model, with the n-gram proposer (no second model) and with a draft model
delivered as an additional model data channel, as AWS's vLLM image takes one. The engine's own ``/metrics``
counts the proposed and accepted tokens."""

from __future__ import annotations

import json
import tarfile
import urllib.request
from typing import Any

import yaml
from click.testing import CliRunner
from llm_support import counter, llm_data, llm_endpoint

from smkit.cli import main
from smkit.config import load_config, parse_config
from smkit.contract import CHANNELS_DIR
from smkit.local import LocalEndpoint

NGRAM = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 1}'
DRAFT = json.dumps({"model": f"{CHANNELS_DIR}/draft", "num_speculative_tokens": 3})


def _speculating(data: dict[str, Any], speculative: str) -> dict[str, Any]:
    """config/llm.yaml's data with the speculative config and no adapter (the engine runs without LoRA)."""
    container = data["model"]["containers"][0]
    container["environment"] = {
        "SM_VLLM_MAX_MODEL_LEN": container["environment"]["SM_VLLM_MAX_MODEL_LEN"],
        "SM_VLLM_SPECULATIVE_CONFIG": speculative,
    }
    components = data["endpoint"]["inference_components"]["components"]
    data["endpoint"]["inference_components"]["components"] = [
        c for c in components if not c.get("base_component")
    ]
    return data


def _drafts(endpoint: LocalEndpoint, prompt: str, label: str) -> None:
    """32 tokens of ``prompt`` through boto3; the engine's own ``/metrics`` must count drafted tokens."""
    process = endpoint.runtime.components["qwen"].process  # type: ignore[attr-defined]
    body = {"prompt": prompt, "max_tokens": 32, "temperature": 0, "ignore_eos": True}
    answer = endpoint.client().invoke_endpoint(
        EndpointName=endpoint.name,
        InferenceComponentName="qwen",
        ContentType="application/json",
        Body=json.dumps(body),
    )
    assert json.loads(answer["Body"].read())["usage"]["completion_tokens"] == 32
    with urllib.request.urlopen(f"http://127.0.0.1:{process.port}/metrics", timeout=30) as reply:
        metrics = reply.read().decode()
    drafted = counter(metrics, "vllm:spec_decode_num_draft_tokens_total")
    accepted = counter(metrics, "vllm:spec_decode_num_accepted_tokens_total")
    print(f"{label}: {accepted:g} of {drafted:g} drafted tokens accepted")
    assert drafted > 0, [line for line in metrics.splitlines() if "spec_decode" in line]


def test_the_ngram_proposer_drafts_tokens_on_the_local_engine(moto_env, tiny, tmp_path) -> None:
    data = _speculating(llm_data(moto_env, tiny), NGRAM)
    config = parse_config(data, source="config/llm.yaml (tiny model, n-gram speculation)")
    with llm_endpoint(config, tmp_path, log_dir=tmp_path / "logs", moto=moto_env) as endpoint:
        process = endpoint.runtime.components["qwen"].process  # type: ignore[attr-defined]
        assert "--speculative-config" in process.command(process.port)
        _drafts(endpoint, "one two three one two three one two three one two three", "n-gram speculation")


def test_a_draft_model_channel_drafts_tokens_on_the_local_engine(moto_env, tiny, tmp_path) -> None:
    """The draft model's folder as the channel ``draft`` (``source: archive``): ``smkit package`` packs it
    into the archive the stack uploads, the loader checks it against the model, and the local endpoint gives
    the container its folder, which ``--speculative-config`` names in place of
    /opt/ml/additional-model-data-sources; vLLM's draft_model proposer runs it beside the model."""
    data = _speculating(llm_data(moto_env, tiny), DRAFT)
    container = data["model"]["containers"][0]
    container["additional_model_data"] = [
        {"channel": "draft", "source": "archive", "path": str(tiny["draft"])}
    ]
    path = tmp_path / "config" / "llm.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    packaged = CliRunner().invoke(main, ["package", "--config", str(path)])
    assert packaged.exit_code == 0, packaged.output
    (archive,) = (tmp_path / "build").rglob("draft.tar.gz")
    with tarfile.open(archive) as tar:
        assert {"config.json", "model.safetensors", "tokenizer.json"} <= set(tar.getnames())
    config = load_config(path)
    with llm_endpoint(config, tmp_path, log_dir=tmp_path / "logs", moto=moto_env) as endpoint:
        process = endpoint.runtime.components["qwen"].process  # type: ignore[attr-defined]
        command = process.command(process.port)
        speculative = json.loads(command[command.index("--speculative-config") + 1])
        channels = endpoint.runtime.workdir / "channels" / container["name"]
        assert speculative == {"model": f"{channels}/draft", "num_speculative_tokens": 3}
        assert (channels / "draft" / "config.json").is_file()
        _drafts(endpoint, "Tell me a story about the sea", "draft model channel")
