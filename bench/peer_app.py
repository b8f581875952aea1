"""The same SageMaker handler (``code/inference.py``) served by the peers a user would otherwise deploy.

Runs inside a peer's own venv (``bench/.venvs/peers``), never with smkit imported: the model directory
comes from ``PEER_MODEL_DIR``, its ``code/`` is put on ``sys.path`` and ``inference.py`` is imported once
per worker process, then ``model_fn`` loads the model. A request runs ``transform_fn`` when the module
defines it, else ``input_fn -> predict_fn -> output_fn`` (every benchmark model defines all three), and an
``output_fn`` result of ``(body, content_type)`` sets the response's type, as the toolkit does.

- ``flask_app``: AWS's bring-your-own-container sample (``predictor.py`` behind gunicorn sync workers and
  nginx: https://github.com/aws/amazon-sagemaker-examples/tree/main/advanced_functionality/scikit_bring_your_own).
- ``fastapi_app``: FastAPI on uvicorn; the handler runs on FastAPI's thread pool (as a plain ``def`` route
  would: 40 threads per worker), so requests that wait overlap.
"""

import asyncio
import importlib
import inspect
import os
import sys
from typing import Any

MODEL_DIR = os.environ["PEER_MODEL_DIR"]
sys.path.insert(0, os.path.join(MODEL_DIR, "code"))
_module = importlib.import_module("inference")
_model = _module.model_fn(MODEL_DIR)


def invoke(body: bytes, content_type: str, accept: str) -> tuple[bytes, str]:
    """One request through the handler's hooks: the response body and its content type."""
    transform = getattr(_module, "transform_fn", None)
    if transform is not None:
        result = transform(_model, body, content_type, accept)
    else:
        data = _module.input_fn(body, content_type)
        prediction = _module.predict_fn(data, _model)
        if inspect.iscoroutine(prediction):  # an ``async def`` hook: run on this thread's own loop
            prediction = asyncio.run(prediction)
        result = _module.output_fn(prediction, accept)
    payload, kind = result if isinstance(result, tuple) else (result, accept)
    return (payload.encode() if isinstance(payload, str) else bytes(payload)), kind


def _flask() -> Any:
    import flask

    app = flask.Flask(__name__)

    @app.route("/ping", methods=["GET"])
    def ping() -> Any:
        return flask.Response(response="\n", status=200, mimetype="application/json")

    @app.route("/invocations", methods=["POST"])
    def invocations() -> Any:
        request = flask.request
        body, kind = invoke(request.get_data(), request.content_type or "", request.headers.get("Accept", ""))
        return flask.Response(response=body, status=200, mimetype=kind)

    return app


def _fastapi() -> Any:
    import fastapi
    from fastapi.concurrency import run_in_threadpool

    app = fastapi.FastAPI()

    @app.get("/ping")
    def ping() -> fastapi.Response:
        return fastapi.Response(content=b"\n", media_type="application/json")

    @app.post("/invocations")
    async def invocations(request: fastapi.Request) -> fastapi.Response:
        body = await request.body()
        headers = request.headers
        # What FastAPI does with a plain ``def`` route: the handler runs on its thread pool.
        payload, kind = await run_in_threadpool(
            invoke, body, headers.get("content-type", ""), headers.get("accept", "")
        )
        return fastapi.Response(content=payload, media_type=kind)

    return app


_SERVER = os.environ.get("PEER_SERVER", "")
flask_app = _flask() if _SERVER == "flask" else None
fastapi_app = _fastapi() if _SERVER == "fastapi" else None
