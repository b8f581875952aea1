"""Handlers that stream, shared by the serving and local-endpoint streaming tests.

The request is JSON: ``chunks`` (count), ``delay`` (seconds before each), ``gate`` (a file the client
creates when it has chunk 0: every later chunk waits for it, so a test proves chunk 0 arrived while the
handler was still running without timing anything), ``fail_at`` (raise before that chunk), ``block``
(bytes per chunk instead of ``chunk i``), ``progress`` (a file the handler writes its chunk count to),
``closed`` (a file created when the generator is closed), ``kind`` (``sync`` or ``async``), ``whole``
(answer the same text as one body, without streaming), ``echo_accept`` (the answer's content type is the
request's Accept).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

STREAMING = """
import asyncio
import json
import os
import time


def model_fn(model_dir):
    return model_dir


def transform_fn(model, data, content_type, accept):
    request = json.loads(data)
    if request.get("whole"):  # not a stream: one body with a Content-Length
        return "".join(chunk(request, index) for index in range(request.get("chunks", 5))), "text/plain"
    if request.get("kind") == "async":
        return async_chunks(request), "text/plain"
    return chunks(request), accept if request.get("echo_accept") else "text/plain"


def wait_gate(request, index):
    gate = request.get("gate")
    if index and gate:
        give_up = time.monotonic() + 120
        while not os.path.exists(gate):
            if time.monotonic() > give_up:
                raise RuntimeError("the gate file never appeared")
            time.sleep(0.005)


def chunk(request, index):
    if request.get("block"):
        return b"x" * request["block"]
    return f"chunk {index}\\n"


def report(request, index):
    if request.get("progress"):
        with open(request["progress"] + ".tmp", "w") as handle:
            handle.write(str(index + 1))
        os.replace(request["progress"] + ".tmp", request["progress"])


def chunks(request):
    try:
        for index in range(request.get("chunks", 5)):
            if index == request.get("fail_at"):
                raise ValueError(f"failed before chunk {index}")
            wait_gate(request, index)
            time.sleep(request.get("delay", 0))
            yield chunk(request, index)
            report(request, index)
    finally:
        if request.get("closed"):
            open(request["closed"], "w").close()


async def bidirectional_fn(model, messages):
    # Text: "end" ends the session, "boom" fails it, "closed:PATH" names a file created when the session
    # ends, anything else is echoed; bytes come back reversed.
    closed = None
    try:
        async for message in messages:
            if isinstance(message, bytes):
                yield message[::-1]
            elif message == "end":
                yield "bye"
                return
            elif message == "boom":
                raise RuntimeError("boom requested")
            elif message.startswith("closed:"):
                closed = message[len("closed:"):]
                yield "noted"
            else:
                yield f"echo {message}"
    finally:
        if closed:
            open(closed, "w").close()


async def async_chunks(request):
    for index in range(request.get("chunks", 5)):
        if index == request.get("fail_at"):
            raise ValueError(f"failed before chunk {index}")
        await asyncio.sleep(request.get("delay", 0))
        if request.get("resumed"):  # a file created each time the generator goes on after its pause
            open(request["resumed"], "w").close()
        yield chunk(request, index)
"""

# predict_fn returns a generator and output_fn is the default: each item is encoded on its own.
PREDICT_STREAM = """
def model_fn(model_dir):
    return None


def predict_fn(data, model):
    for index, value in enumerate(data.tolist()):
        yield {"index": index, "double": value * 2}
"""


# Answers its request unchanged: the first container of a pipeline whose last container streams.
PASSTHROUGH = """
def model_fn(model_dir):
    return None


def transform_fn(model, data, content_type, accept):
    return data, content_type
"""


def write_model(root: Path, name: str, source: str) -> Path:
    """A model directory holding ``code/inference.py``."""
    model_dir = root / name
    (model_dir / "code").mkdir(parents=True)
    (model_dir / "code" / "inference.py").write_text(textwrap.dedent(source))
    return model_dir
