"""Token streaming for the ``text-generation`` pipeline: ``"stream": true`` answered as server-sent events.

The request is the one Hugging Face's Text Generation Inference (TGI) containers on SageMaker take,
``{"inputs": "...", "parameters": {...}, "stream": true}``, and so is the answer (``text/event-stream``,
one event per generated token)::

    data:{"index":1,"token":{"id":17,"text":" the","logprob":null,"special":false},"generated_text":null,"details":null}

    data:{"index":2,...,"generated_text":"the movie","details":{"finish_reason":"length","generated_tokens":2,"seed":null}}

The last event also carries the whole ``generated_text`` (the new text only, or prompt and text with
``"return_full_text": true``) and ``details``. ``logprob`` is null (the pipeline does not compute it).
Sources: https://huggingface.github.io/text-generation-inference/ (``/generate_stream``) and
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_runtime_InvokeEndpointWithResponseStream.html

The pipeline runs in a thread with a streamer that ``generate`` hands every new token; the tokens pass
through a bounded queue, so a slow reader pauses generation instead of buffering the answer, and a reader
that stops (the client went away) stops generation at the next token.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterator
from typing import Any

from smkit.serving.wire.errors import BadRequest

EVENT_STREAM = "text/event-stream"
QUEUE_TOKENS = 64  # tokens generated ahead of a slow reader before generation waits
_POLL_S = 0.1


class _Streamer:
    """What ``generate(streamer=...)`` calls: ``put(ids)`` (the prompt first, then each new token), ``end()``."""

    def __init__(self, out: queue.Queue[tuple[str, Any]], stop: threading.Event) -> None:
        self.out = out
        self.stop = stop
        self.prompt: list[int] | None = None

    def _send(self, item: tuple[str, Any]) -> None:
        while not self.stop.is_set():
            try:
                self.out.put(item, timeout=_POLL_S)
                return
            except queue.Full:
                continue

    def put(self, value: Any) -> None:
        ids = _flat(value.tolist())
        if self.prompt is None:
            self.prompt = ids
            return
        for token in ids:
            self._send(("token", token))

    def end(self) -> None:
        self._send(("end", None))


def _flat(value: Any) -> list[int]:
    if isinstance(value, list):
        return [token for item in value for token in _flat(item)]
    return [int(value)]


class TokenStream(Iterator[bytes]):
    """Server-sent events of one generation, produced as the pipeline generates.

    Iterating starts nothing: the generation thread starts at construction. ``close()`` (also called when
    the reader is garbage-collected mid-stream) stops generation at its next token.
    """

    def __init__(self, pipe: Any, inputs: str, parameters: dict[str, Any]) -> None:
        from transformers import StoppingCriteria, StoppingCriteriaList

        self.tokenizer = pipe.tokenizer
        self.inputs = inputs
        self.full_text = parameters.get("return_full_text") is True
        self.cleanup = parameters.get("clean_up_tokenization_spaces", True)
        eos = pipe.model.generation_config.eos_token_id
        self.eos = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
        self.special = set(self.tokenizer.all_special_ids)
        self.stop = threading.Event()
        self.queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=QUEUE_TOKENS)
        self.streamer = _Streamer(self.queue, self.stop)
        self.tokens: list[int] = []
        self.emitted = ""
        self.pending: dict[str, Any] | None = None
        self.ahead: tuple[str, Any] | None = None
        self.done = False
        stop = self.stop

        class _Stop(StoppingCriteria):
            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                import torch

                return torch.full((input_ids.shape[0],), stop.is_set(), dtype=torch.bool)

        def run() -> None:
            try:
                pipe(
                    inputs,
                    **parameters,
                    streamer=self.streamer,
                    stopping_criteria=StoppingCriteriaList([_Stop()]),
                )
            except Exception as exc:  # noqa: BLE001 - handed to the reader, which raises it
                self.streamer._send(("error", exc))

        self.thread = threading.Thread(target=run, name="smkit-hf-generate", daemon=True)
        self.thread.start()

    def first(self) -> None:
        """Wait for the first token, so that a request the pipeline refuses fails before the answer starts."""
        self.ahead = self.queue.get()
        if self.ahead[0] == "error":
            self.done = True
            exc = self.ahead[1]
            raise BadRequest(
                f"the text-generation pipeline failed on this request: {type(exc).__name__}: {exc}"
            )

    def _decode(self, ids: list[int]) -> str:
        text: str = self.tokenizer.decode(
            ids, skip_special_tokens=True, clean_up_tokenization_spaces=self.cleanup
        )
        return text

    def _event(self, token: int) -> dict[str, Any]:
        prompt = self.streamer.prompt or []
        self.tokens.append(token)
        text = self._decode(prompt + self.tokens)[len(self._decode(prompt)) :]
        piece = (
            "" if text.endswith("\ufffd") or not text.startswith(self.emitted) else text[len(self.emitted) :]
        )
        self.emitted += piece
        return {
            "index": len(self.tokens),
            "token": {"id": token, "text": piece, "logprob": None, "special": token in self.special},
            "generated_text": None,
            "details": None,
        }

    def _finish(self, event: dict[str, Any]) -> dict[str, Any]:
        prompt = self.streamer.prompt or []
        text = self._decode(prompt + self.tokens)[len(self._decode(prompt)) :]
        event["generated_text"] = self.inputs + text if self.full_text else text
        event["details"] = {
            "finish_reason": "eos_token" if self.tokens and self.tokens[-1] in self.eos else "length",
            "generated_tokens": len(self.tokens),
            "seed": None,
        }
        return event

    def __next__(self) -> bytes:
        while not self.done:
            item, self.ahead = self.ahead, None
            kind, value = item if item is not None else self.queue.get()
            if kind == "error":
                self.done = True
                raise value
            if kind == "end":
                self.done = True
                if self.pending is None:
                    break
                return _sse(self._finish(self.pending))
            event, self.pending = self.pending, self._event(value)
            if event is not None:
                return _sse(event)
        raise StopIteration

    def close(self) -> None:
        """Stop generation (at its next token) and let the thread end."""
        self.stop.set()
        self.done = True

    def __del__(self) -> None:
        self.stop.set()


def _sse(event: dict[str, Any]) -> bytes:
    return b"data:" + json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n\n"


def generate_stream(pipe: Any, inputs: str, parameters: dict[str, Any]) -> TokenStream:
    """Start generating ``inputs`` with ``parameters``; the answer's events as they come."""
    if parameters.get("num_return_sequences", 1) != 1:
        raise BadRequest(
            '"stream": true generates one sequence; leave out num_return_sequences or set it to 1'
        )
    stream = TokenStream(pipe, inputs, parameters)
    stream.first()
    return stream
