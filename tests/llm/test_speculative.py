"""Speculative decoding on the local engine: ``SM_VLLM_SPECULATIVE_CONFIG`` (vLLM's ``--speculative-config``)
with the n-gram proposer, which needs no second model, run by vLLM's CPU build on the tiny model. The engine's
own ``/metrics`` counts the proposed and accepted tokens."""

from __future__ import annotations

import json
import re
import urllib.request

from llm_support import STARTUP_S, llm_data

from smkit.config import parse_config
from smkit.local import LocalEndpoint

NGRAM = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 1}'


def _counter(metrics: str, name: str) -> float:
    return sum(
        float(m) for m in re.findall(rf"^{re.escape(name)}(?:{{[^}}]*}})? ([0-9.e+]+)$", metrics, re.M)
    )


def test_the_ngram_proposer_drafts_tokens_on_the_local_engine(moto_env, tiny, tmp_path) -> None:
    data = llm_data(moto_env, tiny)
    container = data["model"]["containers"][0]
    container["environment"] = {
        "SM_VLLM_MAX_MODEL_LEN": container["environment"]["SM_VLLM_MAX_MODEL_LEN"],
        "SM_VLLM_SPECULATIVE_CONFIG": NGRAM,
    }
    components = data["endpoint"]["inference_components"]["components"]
    data["endpoint"]["inference_components"]["components"] = [
        c for c in components if not c.get("base_component")
    ]
    config = parse_config(data, source="config/llm.yaml (tiny model, n-gram speculation)")
    with LocalEndpoint(
        config,
        root=tmp_path,
        log_dir=tmp_path / "logs",
        s3_endpoint_url=moto_env.endpoint_url,
        startup_timeout_s=STARTUP_S,
        component_idle_seconds=24 * 3600.0,
    ) as endpoint:
        process = endpoint.runtime.components["qwen"].process  # type: ignore[attr-defined]
        assert "--speculative-config" in process.command(process.port)
        prompt = "one two three one two three one two three one two three"
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
    drafted = _counter(metrics, "vllm:spec_decode_num_draft_tokens_total")
    accepted = _counter(metrics, "vllm:spec_decode_num_accepted_tokens_total")
    print(f"n-gram speculation: {accepted:g} of {drafted:g} drafted tokens accepted")
    assert drafted > 0, [line for line in metrics.splitlines() if "spec_decode" in line]
