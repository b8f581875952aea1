"""The Java-free SageMaker serving runtime: two kinds of process and the protocol between them.

- :mod:`smkit.serving.front`: the front-end process. :mod:`~smkit.serving.front.event_loop` runs the HTTP
  front end (:mod:`~smkit.serving.front.frontend` on :mod:`smkit.http1`, ``/ping``) and the pool of model
  workers (:mod:`~smkit.serving.front.pool`); :mod:`~smkit.serving.front.launch` resolves what to serve.
- :mod:`smkit.serving.worker`: a model-worker process (``python -m smkit.serving.worker.model_worker``).
  Layers go one way: :mod:`~smkit.serving.worker.routes` -> :mod:`~smkit.serving.worker.handler` (hook
  lifecycle, error -> status) -> :mod:`~smkit.serving.worker.defaults` (default hooks) ->
  :mod:`~smkit.serving.worker.codecs` (content-type tables).
- :mod:`smkit.serving.wire`: what both sides share: the frames between them
  (:mod:`~smkit.serving.wire.ipc`), errors with their HTTP status, the multi-model registry.

The front end and the worker never import each other (tests/test_import_layers.py). Both read the
environment through :mod:`smkit.hosting`, as the TensorFlow Serving runtime (:mod:`smkit.tfs`) does.
Start it with ``python -m smkit.serving --model build/model.tar.gz`` or ``smkit serve``.
See docs/serving-runtime.md.
"""
