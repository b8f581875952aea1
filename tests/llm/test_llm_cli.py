"""``smkit local-endpoint --config`` with config/llm.yaml (the tiny model and adapter in the S3 stand-in in
place of the weights): the CLI starts vLLM's server, says what runs, answers boto3 for the base and the
adapter component, and leaves nothing running after SIGTERM."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading

import boto3
import yaml
from llm_support import llm_data
from waiting import wait_until

from smkit.config import load_deployment
from smkit.config.resolved.names import deployed_names


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_cli_serves_the_llm_config_with_its_engine_and_adapter(moto_env, tiny, tmp_path):
    config = tmp_path / "llm.yaml"
    config.write_text(yaml.safe_dump(llm_data(moto_env, tiny)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "smkit.cli", "local-endpoint", "--config", str(config), "--port", "0"]
        + ["--s3-endpoint-url", moto_env.endpoint_url, "--log-dir", str(tmp_path / "logs")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        banner = []
        assert proc.stderr is not None
        for line in proc.stderr:
            banner.append(line)
            if "Ctrl-C" in line:
                break
        threading.Thread(target=proc.stderr.read, daemon=True).start()
        text = "".join(banner)
        assert "inference component qwen: gpu-qwen pid" in text, text
        assert (
            "vllm engine, arguments --max-model-len 128 --enable-lora --max-lora-rank 64 --max-loras 4"
            in text
        )
        assert "inference component qwen-support: a LoRA adapter loaded into gpu-qwen's engine" in text
        # The names on AWS, as smkit synth says them (tests/stacks/test_deployed_names.py: the templates').
        names = deployed_names(load_deployment(config))
        assert f"deployed by smkit deploy as endpoint: {names.endpoint} (stack LlmDevServing)" in text
        assert f"inference component qwen-support: {names.components['qwen-support']}" in text
        match = re.search(r"on (http://127\.0\.0\.1:\d+)", text)
        assert match is not None, text
        pids = [int(p) for p in re.findall(r"pid (\d+)", text)]
        runtime = boto3.client("sagemaker-runtime", endpoint_url=match.group(1), region_name="us-east-1")
        body = {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 4, "temperature": 0}
        for component in ("qwen", "qwen-support"):
            answer = runtime.invoke_endpoint(
                EndpointName="llm",
                InferenceComponentName=component,
                ContentType="application/json",
                Body=json.dumps(body),
            )
            assert json.loads(answer["Body"].read())["object"] == "chat.completion"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0
        wait_until(
            lambda: not any(_alive(p) for p in pids), timeout=30, what="the engine to end with the CLI"
        )
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
