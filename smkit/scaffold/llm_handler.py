"""``smkit init NAME --framework vllm --handler``: a custom handler file for AWS's vLLM image.

Writes ``model_code/NAME/model/model.py`` (the image loads ``/opt/ml/model/model.py`` when its server
starts: https://aws.github.io/deep-learning-containers/vllm/changelog/) with the three things most teams
write first, each by model-hosting-container-standards' decorators (its docs/sagemaker/
02_customize_handlers.md and 03_customize_pre_post_processing.md): a ``/ping`` of its own that still asks
vLLM whether its engine is healthy, pre-processing that caps ``max_tokens`` and post-processing that adds a
field to every whole JSON answer; and a ``requirements.txt`` beside it, which the image installs before it
starts (empty: the file imports only what the image has). ``smkit package --config`` checks the file
(smkit.llm.handlers) and the local endpoint's engine runs it (docs/llm.md, "Custom handlers").
"""

from __future__ import annotations

from pathlib import Path

MODEL_PY = '''\
"""Custom handlers of {name} for AWS's vLLM image (docs: model-hosting-container-standards,
docs/sagemaker/02_customize_handlers.md and 03_customize_pre_post_processing.md).

The image's server imports this file from the model folder (/opt/ml/model/model.py) when it starts.
`smkit package --config config/{name}.yaml` checks it first, in the engine's environment: what serves
/ping and /invocations, what runs around them, and a refusal naming the line of an import error or a
signature the server cannot call. `smkit local-endpoint --config config/{name}.yaml` runs it with vLLM.
"""

import json

import model_hosting_container_standards.sagemaker as sagemaker_standards
from fastapi import Request, Response
from model_hosting_container_standards.common.fastapi.middleware import input_formatter, output_formatter
from vllm.entrypoints.serve.instrumentator.health import health

MAX_TOKENS = 512  # the most tokens one request may generate


@sagemaker_standards.custom_ping_handler
async def ping(request: Request) -> Response:
    """GET /ping, SageMaker's health check: vLLM's own check of its engine, answered as JSON."""
    engine = await health(request)  # 200, or 503 once the engine has died
    status = "ready" if engine.status_code == 200 else "engine unavailable"
    return Response(
        content=json.dumps({{"status": status}}),
        status_code=engine.status_code,
        media_type="application/json",
    )


@input_formatter
async def cap_max_tokens(request: Request) -> Request:
    """Before every request (every route: look at the path): cap max_tokens of /invocations bodies."""
    if request.url.path == "/invocations":
        body = await request.json()
        if isinstance(body, dict):
            body["max_tokens"] = min(int(body.get("max_tokens") or MAX_TOKENS), MAX_TOKENS)
            request._body = json.dumps(body).encode()
    return request


@output_formatter
async def add_model_version(response: Response) -> Response:
    """After every request: add "model_version" to whole JSON completions. The middleware hands over
    Starlette's streamed response (no .body): read its body_iterator and answer a new response."""
    if response.status_code != 200 or "json" not in response.headers.get("content-type", ""):
        return response  # errors and server-sent events (streams) pass through unchanged
    body = json.loads(b"".join([chunk async for chunk in response.body_iterator]))
    if isinstance(body, dict) and "choices" in body:
        body["model_version"] = "{name}-1"
    headers = {{k: v for k, v in response.headers.items() if k.lower() != "content-length"}}
    return Response(content=json.dumps(body), status_code=200, headers=headers, media_type="application/json")
'''

REQUIREMENTS = """\
# Installed by AWS's vLLM image before its server starts; smkit layers it over the local engine's
# environment (docs/llm.md). model.py imports only what the image has, so nothing is listed.
"""


def handler_files(name: str, model_folder: Path) -> dict[Path, str]:
    """The files ``--handler`` writes into ``model_folder`` (``model_code/NAME/model``), by path."""
    return {
        model_folder / "model.py": MODEL_PY.format(name=name),
        model_folder / "requirements.txt": REQUIREMENTS,
    }
