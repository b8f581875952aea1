"""A handler of smkit's own runtime that answers OpenAI Chat Completions requests, streamed or not, for the
OpenAI-compatible route and signature tests. It echoes the last message, the ``model`` field and the
Content-Type it received, so a test sees what reached the container."""

from __future__ import annotations

import textwrap
from pathlib import Path

CHAT = """
import json


def model_fn(model_dir):
    return model_dir


def transform_fn(model, data, content_type, accept):
    request = json.loads(data)
    text = "echo: " + request["messages"][-1]["content"]
    common = {"id": "chatcmpl-local", "created": 0, "model": request.get("model", ""),
              "system_fingerprint": content_type}
    if request.get("stream"):
        return events(common, text), "text/event-stream"
    answer = {
        **common,
        "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": len(text.split()), "total_tokens": 1 + len(text.split())},
    }
    return json.dumps(answer), "application/json"


def events(common, text):
    for word in text.split(" "):
        chunk = {**common, "object": "chat.completion.chunk",
                 "choices": [{"index": 0, "delta": {"content": word + " "}, "finish_reason": None}]}
        yield "data: " + json.dumps(chunk) + "\\n\\n"
    last = {**common, "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    yield "data: " + json.dumps(last) + "\\n\\n"
    yield "data: [DONE]\\n\\n"
"""

CONFIG = """
name: {name}
region: us-east-1
image: {{source: build, context: ., dockerfile: Dockerfile}}
model:
  network_isolation: false
  containers:
    - name: chat
      model_data: {{source: prefix, path: chat}}
endpoint:
{endpoint}
"""
REALTIME = """
  type: realtime
  variants:
    - {name: main, instance_type: ml.m5.large, initial_instance_count: 1, initial_weight: 1}
"""
COMPONENTS = """
  type: inference-components
  variants:
    - {name: main, instance_type: ml.m5.xlarge, initial_instance_count: 1}
  inference_components:
    instance_scaling: {min_instances: 1, max_instances: 1}
    components:
      - {name: talker, container: chat, compute: {cpu_cores: 1, min_memory_mb: 512}, copies: 1}
"""


def project(root: Path, name: str, endpoint: str) -> Path:
    """A project whose one container serves :data:`CHAT`; returns its config's path."""
    code = root / "chat" / "code"
    code.mkdir(parents=True)
    (code / "inference.py").write_text(textwrap.dedent(CHAT))
    (root / "Dockerfile").write_text("FROM python:3.11-slim\n")
    config = root / f"{name}.yaml"
    config.write_text(CONFIG.format(name=name, endpoint=endpoint))
    return config
