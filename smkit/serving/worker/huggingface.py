"""The default handlers of AWS's Hugging Face inference images: a ``transformers.pipeline`` and no code.

Read from aws/sagemaker-huggingface-inference-toolkit ``handler_service.py`` and ``transformers_utils.py``
(docs/hugging-face.md):

- ``model_fn``: ``pipeline(task=HF_TASK, model=model_dir, tokenizer=model_dir, device=...)`` (a
  ``feature_extractor`` instead of the tokenizer for vision and audio tasks), on GPU 0 when there is one;
  without ``HF_TASK`` the task comes from ``config.json``'s first architecture; ``HF_MODEL_ID`` names
  a local folder to load instead (:mod:`smkit.hftasks`, shared with the packager's check).
- ``input_fn``: the codec tables of :mod:`smkit.serving.worker.hfcodecs` (JSON as it is, CSV with a header, images,
  audio).
- ``predict_fn``: ``pipeline(data.pop("inputs", data), **data.pop("parameters", {}))``.
- ``output_fn``: JSON (default), CSV, NPY or an image.

Every failure of the pipeline call is the caller's 400, as the toolkit answers. On the kit's image (not on
AWS's Hugging Face image, whose model server cannot stream) ``text-generation`` also streams when the
request says ``"stream": true`` (:mod:`smkit.serving.worker.hfstream`).

transformers and torch are imported only when a default that needs them runs, in the model's own
environment.
"""

from __future__ import annotations

import json
from typing import Any

from smkit import hftasks
from smkit.serving.wire.errors import BadRequest
from smkit.serving.worker import hfcodecs
from smkit.serving.worker.defaults import DefaultHandlers, MissingHook

STREAMING_TASKS = frozenset({"text-generation"})


class HuggingFaceDefaults(DefaultHandlers):
    """AWS's Hugging Face image: ``HF_TASK`` picks a ``transformers.pipeline`` over the saved model.

    Args:
        default_accept: the Accept type for ``*/*`` and empty Accept headers.
        task: ``HF_TASK`` (None: inferred from ``config.json``).
        model_id: ``HF_MODEL_ID`` (a local folder, absolute or relative to the model directory).
        trust_remote_code: ``HF_TRUST_REMOTE_CODE``.
        streaming: answer ``"stream": true`` requests of text-generation as a stream (the kit's image).
    """

    output_fn_streams = True  # a token stream leaves as server-sent events (text/event-stream)

    def __init__(
        self,
        default_accept: str,
        *,
        task: str | None = None,
        model_id: str | None = None,
        trust_remote_code: bool = False,
        streaming: bool = False,
    ) -> None:
        super().__init__(default_accept)
        self.task = task
        self.model_id = model_id
        self.trust_remote_code = trust_remote_code
        self.streaming = streaming

    def default_model_fn(self, model_dir: str) -> Any:
        """The ``transformers.pipeline`` of the task over the saved model (and its tokenizer)."""
        try:
            source = hftasks.model_source(model_dir, self.model_id)
            task = self.task or hftasks.infer_task(source)
            model = hftasks.load_pipeline(source, task, trust_remote_code=self.trust_remote_code)
        except hftasks.TaskError as exc:
            raise MissingHook(str(exc)) from None
        self.task = task
        return model

    def default_input_fn(self, input_data: str | bytes, content_type: str | None) -> Any:
        """The toolkit's decoders: JSON as it is, CSV with a header row, images, audio, NPY."""
        return hfcodecs.decode(input_data, content_type, self.task)

    def default_predict_fn(self, data: Any, model: Any) -> Any:
        """``model(inputs, **parameters)``; with ``"stream": true`` on the kit's image, a token stream."""
        if not isinstance(data, dict):
            raise BadRequest(
                f'the request must be a JSON object {{"inputs": ..., "parameters": {{...}}}}, got a '
                f"{type(data).__name__}"
            )
        data = dict(data)
        inputs = data.pop("inputs", data)
        parameters = data.pop("parameters", None) or {}
        if not isinstance(parameters, dict):
            raise BadRequest(
                f"parameters must be a JSON object of pipeline arguments, got {json.dumps(parameters)[:80]}; "
                'e.g. "parameters": {"top_k": 2}'
            )
        if self.streaming and data.get("stream") is True:
            return self._stream(model, inputs, parameters)
        try:
            return model(inputs, **parameters)
        except Exception as exc:  # noqa: BLE001 - the toolkit answers every pipeline failure with 400
            task = getattr(model, "task", self.task)
            raise BadRequest(
                f"the {task} pipeline failed on this request: {type(exc).__name__}: {exc}"
            ) from exc

    def _stream(self, model: Any, inputs: Any, parameters: dict[str, Any]) -> Any:
        from smkit.serving.worker.hfstream import generate_stream

        task = getattr(model, "task", self.task)
        if task not in STREAMING_TASKS:
            raise BadRequest(
                f'"stream": true is supported for {", ".join(sorted(STREAMING_TASKS))} only, and this model\'s '
                f"task is {task}; leave stream out"
            )
        if not isinstance(inputs, str):
            raise BadRequest(f'"stream": true needs "inputs" to be one string, got a {type(inputs).__name__}')
        return generate_stream(model, inputs, parameters)

    def default_output_fn(self, prediction: Any, accept: str) -> Any:
        """JSON (default), CSV, NPY or an image; a token stream goes out as server-sent events."""
        from smkit.serving.worker.hfstream import EVENT_STREAM, TokenStream

        if isinstance(prediction, TokenStream):
            return prediction, EVENT_STREAM
        return hfcodecs.encode(prediction, accept, self.default_accept)
