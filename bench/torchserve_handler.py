"""TorchServe custom handler: the model's ``code/inference.py`` hooks, as bench/peer_app.py calls them.

Runs in a TorchServe worker (bench/torchserve.py copies it and bench/peer_app.py into the model
directory, which TorchServe puts on ``sys.path``). ``handle(None, context)`` loads the model; a request
batch of one goes through peer_app's ``invoke``; a larger batch (TorchServe's ``batchSize``) is decoded
request by request, predicted with the model's ``predict_batch_fn`` in one call and encoded per request.
"""

import importlib
import json
import os

_app = None


def _header(context, index, name):
    value = context.get_request_header(index, name) or context.get_request_header(index, name.lower())
    return value or ""


def _body(row):
    body = row.get("body")
    if body is None:
        body = row.get("data")
    if isinstance(body, str):
        return body.encode()
    if isinstance(body, (dict, list)):  # TorchServe parses application/json bodies itself
        return json.dumps(body).encode()
    return bytes(body or b"")


def handle(data, context):
    global _app
    if data is None:  # TorchServe's initialize call
        os.environ["PEER_MODEL_DIR"] = context.system_properties["model_dir"]
        _app = importlib.import_module("peer_app")
        return None
    kinds = [_header(context, i, "Content-Type") for i in range(len(data))]
    accepts = [_header(context, i, "Accept") for i in range(len(data))]
    bodies = [_body(row) for row in data]
    app = _app
    assert app is not None, "TorchServe calls handle(None, context) before the first request"
    module, model = app._module, app._model
    batch_fn = getattr(module, "predict_batch_fn", None)
    if len(data) > 1 and batch_fn is not None:
        inputs = [module.input_fn(body, kind) for body, kind in zip(bodies, kinds, strict=True)]
        answers = []
        for prediction, accept in zip(batch_fn(inputs, model), accepts, strict=True):
            result = module.output_fn(prediction, accept)
            payload, kind = result if isinstance(result, tuple) else (result, accept)
            answers.append((payload.encode() if isinstance(payload, str) else bytes(payload), kind))
    else:
        answers = [
            app.invoke(body, kind, accept) for body, kind, accept in zip(bodies, kinds, accepts, strict=True)
        ]
    for index, (_, kind) in enumerate(answers):
        context.set_response_content_type(index, kind)
    return [payload for payload, _ in answers]
