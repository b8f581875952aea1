"""AWS's reference container (model-hosting-container-standards) with a tiny engine, for the differential test.

Started by tests/serving/test_serving_contract_parity.py as ``uvicorn contract_reference_app:app`` with
``SAGEMAKER_ENABLE_STATEFUL_SESSIONS=true``. The engine behaves as the test's smkit handler does: it keeps
adapters by name, refuses a duplicate (409), a source ending in ``broken`` (500), an unknown name (404),
and answers an invocation with the session and adapter it sees. Errors are FastAPI's ``{"detail": ...}``.
"""

from __future__ import annotations

from types import SimpleNamespace

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from model_hosting_container_standards.sagemaker import (
    bootstrap,
    register_load_adapter_handler,
    register_unload_adapter_handler,
    stateful_session_manager,
)

ADAPTERS: dict[str, str] = {}


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"detail": message}, status_code=status)


@register_load_adapter_handler(request_shape={"name": "body.name", "src": "body.src"})
async def load_adapter(data: SimpleNamespace, request: Request) -> Response:
    if data.name in ADAPTERS:
        return _error(
            409,
            f"The adapter {data.name} already exists. If you want to replace it, please unregister before "
            "registering a new adapter with the same name.",
        )
    if data.src.endswith("broken"):
        return _error(500, f"no adapter weights at {data.src}")
    ADAPTERS[data.name] = data.src
    return Response(status_code=200)


@register_unload_adapter_handler(request_shape={"name": "path_params.adapter_name"})
async def unload_adapter(data: SimpleNamespace, request: Request) -> Response:
    if data.name not in ADAPTERS:
        return _error(404, f"The adapter {data.name} was not found")
    ADAPTERS.pop(data.name)
    return Response(status_code=200)


app = FastAPI()


@app.post("/invocations")
@stateful_session_manager()
async def invocations(request: Request) -> Response:
    session = request.headers.get("X-Amzn-SageMaker-Session-Id")
    adapter = request.headers.get("X-Amzn-SageMaker-Adapter-Identifier")
    if adapter and adapter not in ADAPTERS:
        return _error(404, f"The adapter {adapter} was not found")
    answer = {
        "session": None if session in (None, "NEW_SESSION") else session,
        "adapter": adapter,
        "adapter_src": ADAPTERS.get(adapter) if adapter else None,
    }
    return JSONResponse(answer)


bootstrap(app)
