"""The scaffold's custom handler file, end to end with the real engine: ``smkit init chat --framework vllm
--handler``, the tiny model built into its model folder, ``smkit package --config`` reporting what serves
each route, and the local endpoint answering with the handler's /ping and its added field."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request

from llm_support import llm_endpoint

from smkit.config import load_config


def _smkit(*args: str, cwd) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "smkit.cli", *args], cwd=cwd, capture_output=True, text=True, check=False
    )


def test_the_scaffolded_handler_is_checked_and_served(tmp_path) -> None:
    done = _smkit("init", "chat", "--framework", "vllm", "--handler", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    built = subprocess.run(
        [sys.executable, "-m", "smkit.llm.tiny", "model_code/chat"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    packaged = _smkit("package", "--config", "config/chat.yaml", cwd=tmp_path)
    assert packaged.returncode == 0, packaged.stderr
    script = tmp_path / "model_code" / "chat" / "model" / "model.py"
    assert f"GET /ping: ping ({script} line 20), chosen by @custom_ping_handler" in packaged.stdout
    assert f"pre-process: cap_max_tokens ({script} line 32), by @input_formatter" in packaged.stdout
    assert f"post-process: add_model_version ({script} line 43), by @output_formatter" in packaged.stdout
    config = load_config(tmp_path / "config" / "chat.yaml")
    with llm_endpoint(config, tmp_path / "run", log_dir=tmp_path / "logs") as endpoint:
        process = endpoint.runtime.components["chat"].process  # type: ignore[attr-defined]
        with urllib.request.urlopen(f"http://127.0.0.1:{process.port}/ping", timeout=30) as answer:
            assert json.loads(answer.read()) == {"status": "ready"}
        answer = endpoint.client().invoke_endpoint(
            EndpointName=endpoint.name,
            InferenceComponentName="chat",
            ContentType="application/json",
            Body=json.dumps({"prompt": "Hello", "max_tokens": 4, "temperature": 0}),
        )
        assert json.loads(answer["Body"].read())["model_version"] == "chat-1"
